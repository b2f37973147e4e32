# clusterpool — make test (the CI command), make demo, make bench, make lint.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
GOCYCLO_VERSION := v0.6.0
GOCYCLO     := $(BIN)/gocyclo-$(GOCYCLO_VERSION)
BENCHSTAT   := $(BIN)/benchstat
BENCH_COUNT ?= 6

K8S_VERSION  := v1.37.2
ETCD_VERSION := v3.7.3
ENVTEST_ASSETS := $(BIN)/k8s/$(K8S_VERSION)-etcd-$(ETCD_VERSION)
export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)

JAEGER_VERSION := v1.75.0
export JAEGER_BIN := $(BIN)/jaeger-$(JAEGER_VERSION)
DEMO_FLAGS  ?= -duration 60s -flap 20s

# The modules vet, lint and test cover. make test runs TESTED_MODULES under -race, and vet,
# staticcheck and lint's tests build them with -race too, so a cold CI compiles each of their
# dependency graphs once for all four (docs/testing.md). BUILT_MODULES are programs the
# benchmarks build with go's default flags (bench/peers/build.sh, and go run of the driver);
# vet and staticcheck check them with the same flags, so again one compile each, which the
# Cluster API suites and the adoption leg (default flags too) share where the versions match.
TESTED_MODULES := . tracing/otlp examples/capi clusterapi bench bench/peers/workload bench/peers/capi
BUILT_MODULES  := bench/plot $(addprefix bench/peers/,protocol cct clustercache clusterpool floor)

.PHONY: all test test-newest adoption chaos chaos-short chaos-short-race vet vet-ahead vet-built lint lint-checks staticcheck test-newest-build capi-conformance-build fmt bench bench-gray bench-scale bench-mhc bench-before-after bench-rotation capi-conformance capi-conformance-adapter bench-scenarios bench-scenarios-realtime bench-peers bench-peers-smoke soak demo demo-replicas demo-herd bench-shard tools clean envtest-assets crds jaeger jaeger-bin trace-picture

all: lint test

## test: go vet and every test under the race detector, module by module (each vetted just
## before its tests), the envtest ones on real kube-apiservers built by envtest-assets; then
## the bench-peers smoke run, and go vet of BUILT_MODULES (last: .ci/run's vet-ahead has
## compiled them by then). go test runs with -vet=off: go vet has just run every analyzer,
## a superset of go test's list, and go test's own vet would analyse each module's whole
## dependency graph a second time (its analyzer flags key a cache of their own).
test: envtest-assets jaeger-bin
	for m in $(TESTED_MODULES); do (cd $$m && $(VET_RACE) && $(GO) test -race -vet=off -count=1 ./...) || exit 1; done
	$(MAKE) bench-peers-smoke
	$(MAKE) vet-built

## test-newest: the newest end of the supported range. In copies of the library
## modules' go.mod (bin/newest), controller-runtime, k8s.io (one release), OpenTelemetry
## and Prometheus go to the newest served releases; then build, vet and test (.ci/run).
test-newest: envtest-assets jaeger-bin
	bash hack/test-newest.sh

## test-newest-build, capi-conformance-build: compile what test-newest and capi-conformance-adapter
## run, and run nothing (.ci/run makes them in the background while make test runs).
test-newest-build:
	NEWEST_BUILD_ONLY=1 bash hack/test-newest.sh

capi-conformance-build: envtest-assets
	CONFORMANCE_BUILD_ONLY=1 bash clusterapi/conformance/run.sh adapter

## adoption: a provider's switch, done on a copy of Cluster API v1.14.2: the import swapped
## in its three managers, the require added, go mod tidy; fails if any of Cluster API's
## require lines changes version; builds ./core; prints the go.mod diff (.ci/run).
adoption:
	bash hack/adoption.sh

## vet: go vet in every module, the tested ones with -race (see TESTED_MODULES).
VET_RACE := GOFLAGS=-race $(GO) vet ./...
VET_PLAIN := $(GO) vet ./...
vet: vet-ahead
	$(VET_RACE)

## vet-ahead: vet without the root module (.ci/run makes it in the background while make
## test vets and tests the root module, so the later modules are compiled when it reaches them).
vet-ahead:
	for m in $(filter-out .,$(TESTED_MODULES)); do (cd $$m && $(VET_RACE)) || exit 1; done
	$(MAKE) vet-built

## vet-built: go vet of BUILT_MODULES, with the flags they are built with.
vet-built:
	for m in $(BUILT_MODULES); do (cd $$m && $(VET_PLAIN)) || exit 1; done

## envtest-assets: build kube-apiserver and etcd from the module proxy into ./bin (once; ~10 min).
envtest-assets: $(ENVTEST_ASSETS)/kube-apiserver

$(ENVTEST_ASSETS)/kube-apiserver:
	K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) bash hack/envtest-assets.sh

## jaeger-bin: build Jaeger v2 from the module proxy into ./bin (once; ~8 min).
jaeger-bin: $(JAEGER_BIN)

$(JAEGER_BIN):
	bash hack/build-tool.sh $@ hack/tools/jaeger github.com/jaegertracing/jaeger/cmd/jaeger -ldflags "-s -w"

## jaeger: run Jaeger on 127.0.0.1 only (in-memory); Ctrl-C stops it.
jaeger: jaeger-bin
	@echo "Jaeger: query API http://127.0.0.1:16686/api/traces?service=clusterpool-demo, OTLP/HTTP http://127.0.0.1:4318"
	@echo "send the demo's traces: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 make demo"
	$(JAEGER_BIN) --config hack/jaeger.yaml

## trace-picture: regenerate docs/trace.png from a real demo trace in Jaeger.
trace-picture: jaeger-bin envtest-assets
	bash hack/trace-picture.sh

## crds: regenerate the Cluster API Cluster CRD of examples/capi with controller-gen.
crds:
	cd hack/crdgen && $(GO) tool controller-gen crd paths=sigs.k8s.io/cluster-api/api/core/v1beta2 output:crd:dir=$(CURDIR)/examples/capi/config/crd.tmp
	mv examples/capi/config/crd.tmp/cluster.x-k8s.io_clusters.yaml examples/capi/config/crd/
	rm -rf examples/capi/config/crd.tmp

## lint: no tracked build output, links that stay in the repository, no measured figure in a
## library doc comment, the README's quick starts compile, no library function over
## cyclomatic complexity 15 (gocyclo), every pool and kube lock in the documented order and the pool's
## core pure (two source checks in ./pool), gofmt, go vet and staticcheck (built into ./bin from hack/tools).
## .ci/run makes its parts apart: lint-checks first, vet with make test, staticcheck in the background.
lint: lint-checks vet staticcheck

## lint-checks: lint without go vet and staticcheck.
lint-checks: $(GOCYCLO)
	bash hack/check-tracked.sh
	bash hack/check-links.sh
	bash hack/check-figures.sh
	bash hack/check-readme.sh
	@over=$$($(GOCYCLO) -over 15 pool breaker kube internal tracing | grep -v '_test\.go' || true); \
	if [ -n "$$over" ]; then echo "cyclomatic complexity over 15:"; echo "$$over"; exit 1; fi
	$(GO) test -race -vet=off -count=1 -run 'TestLockOrderIsDocumented|TestCoreIsPure' ./pool ./kube ./internal/lockdoc
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

## staticcheck: staticcheck in every module, with the flags each is built with (see TESTED_MODULES).
staticcheck: $(STATICCHECK)
	for m in $(TESTED_MODULES); do (cd $$m && GOFLAGS=-race $(STATICCHECK) ./...) || exit 1; done
	for m in $(BUILT_MODULES); do (cd $$m && $(STATICCHECK) ./...) || exit 1; done

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: the benchmarks of bench/, BENCH_COUNT runs each, then benchstat
## with the implementations side by side (ratios against the first column).
bench: $(BENCHSTAT)
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) . | tee results.txt
	$(BENCHSTAT) -col /impl bench/results.txt

## demo: the Cluster API demo on real kube-apiservers (examples/capi): one
## management and three workload apiservers, a dead and a flapping cluster.
demo: envtest-assets
	cd examples/capi && $(GO) run . $(DEMO_FLAGS)

## demo-replicas: the same demo with two controller replicas sharding the
## clusters through Leases (kube/shard); halfway, one stops and hands over.
demo-replicas: envtest-assets
	cd examples/capi && $(GO) run . $(DEMO_FLAGS) -replicas 2

## bench-shard: kube/shard's figures for 1 000 clusters: memory per replica
## vs replicas, and clusters moved per membership change vs the ideal 1/N.
bench-shard: $(BENCHSTAT)
	$(GO) test -run '^$$' -bench . -count $(BENCH_COUNT) ./kube/shard/ | tee $(BIN)/bench-shard.txt
	$(BENCHSTAT) $(BIN)/bench-shard.txt

## demo-herd: the dependency-free demo on plain loopback sockets.
demo-herd:
	$(GO) run ./examples/herd -duration 10s

tools: $(STATICCHECK) $(GOCYCLO) $(BENCHSTAT)

# The lint tools go through hack/build-tool.sh, which keeps them in the per-user cache.
$(GOCYCLO): hack/tools/go.mod
	bash hack/build-tool.sh $@ hack/tools github.com/fzipp/gocyclo/cmd/gocyclo

$(STATICCHECK):
	bash hack/build-tool.sh $@ hack/tools honnef.co/go/tools/cmd/staticcheck

$(BENCHSTAT): hack/tools/go.mod
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ golang.org/x/perf/cmd/benchstat

clean:
	rm -rf $(BIN)

## bench-scenarios: the controller simulation (bench/sim): every scenario with
## CCT, ClusterCache and clusterpool in virtual time (synctest; ~15 s), one
## table to stdout and bench/results/scenarios.md, JSON and a plot under
## bench/results/. SCENARIO_FLAGS adds flags (-run, -strategies, -seed,
## -workers, -legacy-queue). bench-scenarios-realtime runs the same table
## in scaled real time (~10 min), the cross-check on a real clock.
bench-scenarios:
	@mkdir -p bench/results
	cd bench && $(GO) test ./cmd/scenarios -run '^TestScenarios$$' -count=1 -timeout 30m -args -table \
		-json $(CURDIR)/bench/results/scenarios.json -md $(CURDIR)/bench/results/scenarios.md $(SCENARIO_FLAGS)
	@cat bench/results/scenarios.md
	cd bench/plot && $(GO) run . -scenarios -in ../results/scenarios.json -out ../results/scenarios.png

bench-scenarios-realtime:
	cd bench && $(GO) run ./cmd/scenarios $(SCENARIO_FLAGS)

## bench-peers: the real ClusterCacheTracker (Cluster API v1.8.4), the real
## ClusterCache (v1.14.2) and clusterpool, each its own program built into
## bin/peers/, run in turn on one fleet of real apiservers (~15 min): one
## table, then bench/sim's model against it. Writes bench/peers/results/
## peers.{md,json,png}; PEERS_FLAGS adds driver flags (-h lists them).
bench-peers: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver $(PEERS_FLAGS) -json $(CURDIR)/bench/peers/results/peers.json) | tee bench/peers/results/peers.md
	cd bench/plot && $(GO) run . -in ../peers/results/peers.json -out ../peers/results/peers.png

## bench-gray: issue 43's gray run (~12 min): 40 Clusters, each behind an
## internal/grayproxy; 10 % slow, 10 % at 40 % errors, 10 % throttled, one at
## 60 % and one at 20 % errors; stock ClusterCache v1.14.2 and clusterpool, each
## once with no fault and once with them. Writes bench/peers/results/
## gray.{md,json,png}; GRAY_FLAGS adds driver flags (-h lists the -gray-… ones).
bench-gray: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver -gray -strategies clustercache,clusterpool $(GRAY_FLAGS) -json $(CURDIR)/bench/peers/results/gray.json) | tee bench/peers/results/gray.md
	cd bench/plot && $(GO) run . -gray -in ../peers/results/gray.json -out ../peers/results/gray.png

## bench-peers-smoke: the bench-peers harness on 4 clusters, the dead
## scenario for 10 s per peer; fails unless every peer reconciled (make test).
bench-peers-smoke: envtest-assets
	cd bench && $(GO) run ./peers/driver -smoke

## soak: the pool's soak test for SOAK_DURATION (default 2m): 10 000 clusters,
## 200 goroutines issuing Gets, fault modes switching every 250 ms; prints
## Gets/s, wait p99, heap per cluster and goroutines. `make test` runs 3 s of it
## under the race detector.
SOAK_DURATION ?= 2m
soak:
	$(GO) test -run '^TestSoak$$' -count=1 -v ./pool/ -soak.duration=$(SOAK_DURATION)

## bench-scale: the real peers and a bare client-go floor on fleets of 100, 1,000,
## 3,000 and 10,000 Clusters (each behind its own proxy, 3 workload apiservers; CCT
## and -peer programs up to 1,000; a size that does not fit the machine is skipped,
## the reason written): time to connect all, RSS, heap, goroutines, idle CPU and
## requests, TCP connections per cluster, fitted per cluster over N; the p99 of a Get
## under 100 Gets/s; then 3 clusters per fault class are killed (apiserver stopped,
## black-hole partition, apiserver killed; 2 small apiservers of their own) and the
## time until each peer reports them not connected (~40 min). Writes
## bench/peers/results/scale.{md,json,png}; SCALE_SIZES sets the sizes,
## SCALE_FLAGS adds driver flags.
SCALE_SIZES ?= 100,1000,3000,10000
SCALE_FLAGS ?=
bench-scale: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver -scale $(SCALE_SIZES) -cct-max 1000 $(SCALE_FLAGS) -json $(CURDIR)/bench/peers/results/scale.json) | tee bench/peers/results/scale.md
	cd bench/plot && $(GO) run . -scale -in ../peers/results/scale.json -out ../peers/results/scale.png

## bench-mhc: a real Cluster API controller, v1.14.2's MachineHealthCheck reconciler
## (bench/peers/capi), on the stock ClusterCache and on clusterpool's drop-in, in turn
## (stock, adapter, adapter, stock) on one fleet of 40 Clusters × 5 Machines with 20 % dead
## and 10 % flapping (~7 min): time until every healthy Machine is checked, reconcile
## errors, dials to dead clusters. Writes bench/peers/results/mhc.{md,json}; MHC_FLAGS adds
## driver flags.
MHC_FLAGS ?=
bench-mhc: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver -mhc $(MHC_FLAGS) -json $(CURDIR)/bench/peers/results/mhc.json) | tee bench/peers/results/mhc.md

## bench-before-after: issue 37's earlier bars in one run, before (BEFORE, default 1bc0d5e: a
## throwaway git worktree under bin/) against this working tree (~50 min, builds of the before
## peers ~15 min more the first time): bench/'s hit-path benchmarks, BENCH_COUNT runs of each
## tree alternating; the soak for SOAK_DURATION, before, after, after, before; one bench-peers run
## with the before clusterpool peer; one bench-mhc run with the before drop-in (stock, adapter,
## before, before, adapter, stock). Writes bench/peers/results/before-after.{md,json} (after ÷
## before per figure) and the raw outputs under before-after/; BA_FLAGS adds
## hack/before-after.sh flags (-only, -peers-flags, -mhc-flags, -keep; -h lists them).
BEFORE ?= 1bc0d5e
BA_FLAGS ?=
bench-before-after: envtest-assets $(BENCHSTAT)
	bash hack/before-after.sh -before $(BEFORE) -count $(BENCH_COUNT) -soak $(SOAK_DURATION) $(BA_FLAGS)

## bench-rotation: every Cluster's kubeconfig Secret gets a new bearer token every 20 s
## (6 rotations), the old token is revoked 5 s later (a token webhook on 127.0.0.1); the
## stock ClusterCache v1.14.2 and clusterpool in turn on 30 Clusters × 5 objects (~6 min):
## relists, new connections, 401s, seconds not connected, failed and requeued reconciles
## per rotation. Writes bench/peers/results/rotation.{md,json}; ROTATION_FLAGS adds driver flags.
ROTATION_FLAGS ?=
bench-rotation: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver -rotation -clusters 30 -objects 5 $(ROTATION_FLAGS) -json $(CURDIR)/bench/peers/results/rotation.json) | tee bench/peers/results/rotation.md

## chaos: an hour of overlapping faults (CHAOS_DURATION, default 60m; CHAOS_SEED, default 1)
## on 100 Clusters over 4 workload apiservers behind fault and gray proxies (TCP, apiserver,
## credential and issue 43's gray faults), with Cluster API v1.14.2's
## MachineHealthCheck and Machine reconcilers: the drop-in and the stock ClusterCache at once, one
## manager and management apiserver each, every fault on both (~65 min); the report lists where the
## drop-in is behind (10 % + 0.5 s). Writes bench/peers/results/chaos.{md,json,png} and chaos-samples.json (every time back); CHAOS_FLAGS adds
## driver flags (-chaos-pprof DIR keeps the manager's goroutine and heap profiles at the
## baseline and the end). chaos-short (.ci/run): 3 minutes, seed 1 (or CHAOS_SEED), the drop-in alone on 30
## Clusters; fails if anything is stuck, leaked, crossed, hung or cut off. chaos-short-race: the same
## with the manager built with -race (a data race ends it: a crash, which fails the run).
CHAOS_SEED ?= 1
CHAOS_DURATION ?= 60m
chaos: envtest-assets
	@mkdir -p bench/peers/results
	set -o pipefail; (cd bench && $(GO) run ./peers/driver -chaos -chaos-seed $(CHAOS_SEED) -chaos-duration $(CHAOS_DURATION) $(CHAOS_FLAGS) -json $(CURDIR)/bench/peers/results/chaos.json) | tee bench/peers/results/chaos.md
	cd bench/plot && $(GO) run . -chaos -in ../peers/results/chaos.json -out ../peers/results/chaos.png

chaos-short: envtest-assets
	cd bench && $(GO) run ./peers/driver -chaos-short $(CHAOS_FLAGS)

chaos-short-race: envtest-assets
	cd bench && $(GO) run ./peers/driver -chaos-short -chaos-race $(CHAOS_FLAGS)

## capi-conformance: Cluster API v1.14.2's own envtest suites (every package that calls
## clustercache.SetupWithManager), stock and on clusterpool's drop-in, compared
## (clusterapi/conformance/README.md; ~25 min, the adapter half ~11 min).
capi-conformance: envtest-assets
	bash clusterapi/conformance/run.sh both

## capi-conformance-adapter: the adapter half alone (run by .ci/run).
capi-conformance-adapter: envtest-assets
	bash clusterapi/conformance/run.sh adapter
