# The targets are the commands the README shows.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
KUBECONFORM_VERSION := v0.7.0
KUBECONFORM := $(BIN)/kubeconform-$(KUBECONFORM_VERSION)
FUZZTIME ?= 10s

.PHONY: test vet lint schemas unit bench bench-scale bench-lib fuzz demo tools generate api

## test: everything CI runs: vet, staticcheck, the size ceilings of
## hack/apisize, the race-enabled test suite (which needs the real servers
## and writers that `make tools` builds).
test: vet lint tools schemas unit

# The programs integration tests run, built from hack/tools (its own modules,
# so k8s.io/kubernetes and etcd never enter the library's go.mod). A binary is
# rebuilt only when its module's go.mod or go.sum, or its own source, changes.
GENERATORS := $(BIN)/deepcopy-gen $(BIN)/defaulter-gen $(BIN)/conversion-gen $(BIN)/validation-gen
TOOLS := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/etcdctl $(BIN)/etcdutl $(BIN)/atomicwriter $(BIN)/prow-updateconfig $(GENERATORS)
K8S_MOD := hack/tools/go.mod hack/tools/go.sum
ETCD_MOD := hack/tools/etcd/go.mod hack/tools/etcd/go.sum
CODEGEN_MOD := hack/tools/codegen/go.mod hack/tools/codegen/go.sum
PROW_MOD := hack/tools/prow/go.mod hack/tools/prow/go.sum

## tools: build kube-apiserver, etcd, etcdctl, etcdutl, the AtomicWriter driver, prow's
## updateconfig and the code generators into bin/.
tools: $(TOOLS)

# k8s.io/code-generator, in a module of its own (hack/tools/codegen).
$(BIN)/%-gen: $(CODEGEN_MOD)
	@mkdir -p $(BIN)
	cd hack/tools/codegen && $(GO) build -o $@ k8s.io/code-generator/cmd/$*-gen

## generate: the example component's deep copies, defaults registration,
## conversions and declarative validation, by deepcopy-gen, defaulter-gen,
## conversion-gen and validation-gen, and its JSON Schemas
## (hack/codegen.sh); a test fails when the committed files are stale.
generate: $(GENERATORS)
	BIN=$(BIN) hack/codegen.sh

$(BIN)/kube-apiserver: $(K8S_MOD)
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/atomicwriter: $(K8S_MOD) hack/tools/cmd/atomicwriter/main.go
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ ./cmd/atomicwriter

# prow's updateconfig plugin (sigs.k8s.io/prow), in a module of its own:
# prow pins client-go and controller-runtime releases of its own.
$(BIN)/prow-updateconfig: $(PROW_MOD) hack/tools/prow/main.go
	@mkdir -p $(BIN)
	cd hack/tools/prow && $(GO) build -o $@ .

$(BIN)/etcd: $(ETCD_MOD)
	@mkdir -p $(BIN)
	cd hack/tools/etcd && $(GO) build -o $@ go.etcd.io/etcd/server/v3

# etcdctl saves a snapshot of the running etcd, etcdutl restores it: the
# recovery test restores etcd to an older revision under kube-apiserver.
$(BIN)/etcdctl $(BIN)/etcdutl: $(BIN)/%: $(ETCD_MOD)
	@mkdir -p $(BIN)
	cd hack/tools/etcd && $(GO) build -o $@ go.etcd.io/etcd/$*/v3

# Modules of their own beside the library: the bench, the controller-runtime
# integration and the examples with heavy dependencies (examples/manifests
# and its differential test build on k8s.io/kubernetes at the version
# hack/tools builds kube-apiserver from, so they share its build cache).
MODULES := bench integrations/stratacr integrations/strataknative integrations/stratacobra examples/jobdefaults examples/manifests examples/manifests/differential examples/kubelet examples/plugins examples/tekton

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt wants to change:"; echo "$$out"; exit 1; fi
	@out=$$(git ls-files -ci --exclude-standard); if [ -n "$$out" ]; then echo ".gitignore ignores files git tracks (and would keep new ones beside them out):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd hack/tools && $(GO) vet ./...
	cd hack/tools/prow && $(GO) vet ./...
	@set -e; for m in $(MODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...); done

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $@

$(KUBECONFORM):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	mv $(BIN)/kubeconform $@

## schemas: check the example component's files against the JSON Schemas
## `make generate` writes, with kubeconform, as a component's users would
## in CI (docs/COMPONENT.md). A drop-in that names no kind is checked by
## the example's tests instead: kubeconform needs the kind.
SCHEMA_LOCATION := examples/component/schemas/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json
schemas: $(KUBECONFORM)
	$(KUBECONFORM) -strict -summary -schema-location '$(SCHEMA_LOCATION)' \
		examples/component/testdata/component.yaml examples/component/testdata/component-v1alpha1.yaml \
		examples/component/testdata/instance.yaml examples/component/testdata/component.d/20-tls.yaml

lint: $(STATICCHECK)
	$(STATICCHECK) ./...
	@set -e; for m in $(MODULES); do echo "cd $$m && staticcheck ./..."; (cd $$m && $(STATICCHECK) ./...); done
	$(GO) run ./hack/apisize

# The bench module's tests check that every library it compares arrives at
# the same configuration; its benchmarks run only under `make bench`.
# examples/jobdefaults runs controller-runtime's envtest on the servers in
# bin/.
unit:
	$(GO) test -race -count=1 ./...
	@set -e; for m in $(MODULES); do echo "cd $$m && $(GO) test -race -count=1 ./..."; (cd $$m && KUBEBUILDER_ASSETS=$(BIN) $(GO) test -race -count=1 ./...); done

## bench: strata side by side with viper, koanf, knative, a Tekton-style
## loader (the bench module) and a hand-written controller-runtime reconciler
## (examples/jobdefaults) and PR #9517's Tekton loader (examples/tekton), written up in docs/PERFORMANCE.md. Cases 1-4 run
## BENCH_COUNT times (the document gives medians); case 5 makes 100 kubelet
## updates once; cases 6 and 7 run once against 10,000 namespaces; case 8
## once (a 50 MB tree reloading, 8 shards changing, 20 publishes to 3 replicas); case 9 (examples/tekton,
## Tekton's own constructors) BENCH_COUNT times. The raw
## output, for benchstat, is bin/bench.txt.
BENCH_COUNT ?= 5
bench: tools
	@mkdir -p $(BIN)
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench 'Case[1-4]' -benchmem -count $(BENCH_COUNT) . | tee $(BIN)/bench.txt
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench 'Case5' -benchmem -benchtime 1x . | tee -a $(BIN)/bench.txt
	set -o pipefail; cd examples/jobdefaults && KUBEBUILDER_ASSETS=$(BIN) $(GO) test -run '^$$' -bench 'Case6' -benchtime 1x -timeout 30m . | tee -a $(BIN)/bench.txt
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench 'Case7Scale/(lazy|cluster|unlabelled)' -benchtime 1x -timeout 60m . | tee -a $(BIN)/bench.txt
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench 'Case7Scale/evict' -benchmem -timeout 30m . | tee -a $(BIN)/bench.txt
	set -o pipefail; cd bench && $(GO) test -run '^$$' -bench 'Case8Trees' -benchtime 1x -timeout 30m . | tee -a $(BIN)/bench.txt
	set -o pipefail; cd examples/tekton && $(GO) test -run '^$$' -bench 'Case9' -benchmem -count $(BENCH_COUNT) ./tektonconfig | tee -a $(BIN)/bench.txt
	cd bench && $(GO) run ./cmd/perfdoc -in $(BIN)/bench.txt$(if $(wildcard $(BIN)/bench-scale.txt),$(COMMA)$(BIN)/bench-scale.txt) \
	  -notes cmd/perfdoc/notes.md -out ../docs/PERFORMANCE.md -commit "$$(git rev-parse --short HEAD)"

COMMA := ,
SCALE ?= 10000,30000,100000

## bench-scale: case 10, case 7's Lazy rows at SCALE namespaces, apart
## from bench: creating 100,000 namespaces with their overlays on 2 cores
## takes longer than bench should (docs/PERFORMANCE.md, case 10, says how
## long). Its output, bin/bench-scale.txt, goes into the document the next
## make bench writes.
bench-scale: tools
	@mkdir -p $(BIN)
	set -o pipefail; { echo "commit: $$(git rev-parse --short HEAD)"; \
	  cd bench && STRATA_SCALE_NAMESPACES=$(SCALE) $(GO) test -run '^$$' -bench 'Case7Namespaces' -benchtime 1x -timeout 180m -v . ; } | tee $(BIN)/bench-scale.txt

## api: per package of the library, its non-test lines and exported
## names, against the budgets hack/apisize states; it fails above one. test
## runs it against its ceilings, the figures as they stand, so that none
## grows while it is above its budget.
api:
	$(GO) run ./hack/apisize -budgets

## bench-lib: the library's own benchmarks, with allocations.
bench-lib:
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
