package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/servingcert"
)

// The manager's servers are strata's, under httpserve's limits, rather
// than controller-runtime's, which bound no connection's count and no
// request's read or reply: its metrics and health-probe servers are off,
// these serve the same paths, and webhookServer serves the webhooks.

// addServer adds a server of h on addr to mgr, run while mgr runs.
func addServer(mgr manager.Manager, name, addr string, h http.Handler) error {
	srv, ln, err := httpserve.Listen(addr, h)
	if err != nil {
		return fmt.Errorf("the %s server: %w", name, err)
	}
	grace := 5 * time.Second
	return mgr.Add(&manager.Server{Name: name, Server: srv, Listener: ln, ShutdownTimeout: &grace})
}

// metricsHandler serves controller-runtime's registry at /metrics, as its
// metrics server does, and extra beside it (the z-pages).
func metricsHandler(extra map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	for path, h := range extra {
		mux.Handle(path, h)
	}
	return mux
}

// probeHandler serves /healthz and /readyz with their checks, as the
// manager's health-probe server does.
func probeHandler(healthzChecks, readyzChecks map[string]healthz.Checker) http.Handler {
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": healthzChecks, "/readyz": readyzChecks} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	return mux
}

// webhookServer is controller-runtime's webhook server (its Register
// instruments each hook) served through httpserve.
type webhookServer struct {
	webhook.Server
	host    string
	port    int
	certDir string
	started atomic.Bool
}

var _ webhook.Server = (*webhookServer)(nil)

func newWebhookServer(host string, port int, certDir string) *webhookServer {
	return &webhookServer{
		Server: webhook.NewServer(webhook.Options{Host: host, Port: port, WebhookMux: http.NewServeMux()}),
		host:   host, port: port, certDir: certDir,
	}
}

// Start serves the webhooks until ctx ends.
func (s *webhookServer) Start(ctx context.Context) error {
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.certDir, servingcert.CertFile), filepath.Join(s.certDir, servingcert.KeyFile))
	if err != nil {
		return fmt.Errorf("the webhook's certificate: %w", err)
	}
	srv, ln, err := httpserve.Listen(net.JoinHostPort(s.host, strconv.Itoa(s.port)), s.WebhookMux())
	if err != nil {
		return fmt.Errorf("the webhook's listener: %w", err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	s.started.Store(true)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// StartedChecker is healthy once the webhooks are served.
func (s *webhookServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("the webhook server has not started yet")
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", net.JoinHostPort(s.host, strconv.Itoa(s.port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a dial to see it listens
		if err != nil {
			return fmt.Errorf("the webhook server is not reachable: %w", err)
		}
		return c.Close()
	}
}
