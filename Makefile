# The targets are the commands the README shows.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
FUZZTIME ?= 10s

.PHONY: test vet lint unit bench fuzz demo tools

## test: everything CI runs: vet, staticcheck, the race-enabled test suite
## (which needs the real servers and writers that `make tools` builds).
test: vet lint tools unit

# The programs integration tests run, built from hack/tools (its own modules,
# so k8s.io/kubernetes and etcd never enter the library's go.mod). A binary is
# rebuilt only when its module's go.mod or go.sum, or its own source, changes.
TOOLS := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/atomicwriter
K8S_MOD := hack/tools/go.mod hack/tools/go.sum
ETCD_MOD := hack/tools/etcd/go.mod hack/tools/etcd/go.sum

## tools: build kube-apiserver, etcd and the AtomicWriter driver into bin/.
tools: $(TOOLS)

$(BIN)/kube-apiserver: $(K8S_MOD)
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/atomicwriter: $(K8S_MOD) hack/tools/cmd/atomicwriter/main.go
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ ./cmd/atomicwriter

$(BIN)/etcd: $(ETCD_MOD)
	@mkdir -p $(BIN)
	cd hack/tools/etcd && $(GO) build -o $@ go.etcd.io/etcd/server/v3

vet:
	$(GO) vet ./...
	cd hack/tools && $(GO) vet ./...

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
