# The targets are the commands the README shows.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
FUZZTIME ?= 10s

.PHONY: test vet lint unit bench fuzz demo tidy-check

## test: everything CI runs: vet, staticcheck, the race-enabled test suite.
test: vet lint unit

vet:
	$(GO) vet ./...

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $@

lint: $(STATICCHECK)
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./...

## bench: every benchmark, with allocations.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## demo: the component example on its shipped configuration, drop-ins and flags.
demo:
	$(GO) run ./examples/component --config examples/component/testdata/component.yaml --explain
	$(GO) run ./examples/component --config examples/component/testdata/component-v1alpha1.yaml \
	  --config-dir examples/component/testdata/component.d --port 7443 --feature-gates BetaThing=true --print-config
