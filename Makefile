# clusterpool — make test (the CI command), make demo, make bench, make lint.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
BENCHSTAT   := $(BIN)/benchstat
BENCH_COUNT ?= 6
DEMO_FLAGS  ?= -duration 10s

.PHONY: all test vet lint fmt bench demo tools clean

all: lint test

## test: go vet, then every test of the library under the race detector.
test: vet
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

## lint: gofmt, go vet and staticcheck (built into ./bin from hack/tools).
lint: $(STATICCHECK) vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(STATICCHECK) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: the benchmarks of bench/, BENCH_COUNT runs each, then benchstat
## with the implementations side by side (ratios against the first column).
bench: $(BENCHSTAT)
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) ./bench/ | tee bench/results.txt
	$(BENCHSTAT) -col /impl bench/results.txt

## demo: the herd demo on 127.0.0.1 (healthy, dead, refusing, flapping clusters).
demo:
	$(GO) run ./examples/herd $(DEMO_FLAGS)

tools: $(STATICCHECK) $(BENCHSTAT)

$(STATICCHECK):
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ honnef.co/go/tools/cmd/staticcheck

$(BENCHSTAT): hack/tools/go.mod
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $@ golang.org/x/perf/cmd/benchstat

clean:
	rm -rf $(BIN)
