package namespaced

import "k8s.io/utils/clock"

// WithClock makes the resolver built with o time its pauses by c: a test
// steps a fake clock instead of sleeping.
func WithClock[T any](o *Options[T], c clock.WithTickerAndDelayedExecution) { o.clock = c }

// OnRelist has the resolver built with o call h once each relist of Lazy
// mode has ended, its result applied or, when older than what the
// namespace holds, dropped.
func OnRelist[T any](o *Options[T], h func(ns, rv string)) { o.relisted = h }
