# aidialect: the two commands a new user needs are `make run` and `make test`.
GO       ?= go
FUZZTIME ?= 60s
BENCHTIME ?= 1s
DIST     := dist

.PHONY: all build test vet bench fuzz run clean

all: test

WASM     := $(DIST)/aidialect.wasm
# The filter must stay small enough for Envoy to fetch and compile quickly (issue budget: 4 MiB).
MAX_WASM_BYTES := 4194304

## test: every test (vet, format check, unit and golden tests in Go and in the compiled .wasm, fuzz seeds)
test: vet build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt wants to reformat: $$unformatted"; exit 1; fi
	AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

## bench: hot-path benchmarks beside their floors (ratios in BENCHMARKS.md)
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./translate/

## fuzz: every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m)
fuzz:
	@set -e; for target in $$($(GO) test -list='^Fuzz' ./translate/ | grep '^Fuzz'); do \
		echo "== $$target ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) ./translate/; \
	done

## build: the Envoy filter, dist/aidialect.wasm
build:
	@mkdir -p $(DIST)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags="-s -w" -o $(WASM) ./plugin
	@size=$$(wc -c < $(WASM)); echo "$(WASM): $$size bytes (budget $(MAX_WASM_BYTES))"; \
	if [ $$size -gt $(MAX_WASM_BYTES) ]; then echo "$(WASM) is over its size budget" >&2; exit 1; fi

## run: the local gateway with mock providers
run:
	@echo "make run: the local gateway and mock providers (e2e/, issue 4) are not written yet." >&2; exit 1

clean:
	rm -rf $(DIST)
