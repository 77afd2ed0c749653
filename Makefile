# aidialect: the two commands a new user needs are `make run` and `make test`.
GO       ?= go
FUZZTIME ?= 60s
BENCHTIME ?= 1s
DIST     := dist

.PHONY: all build test vet bench fuzz run clean

all: test

## test: every test (vet, format check, unit and golden tests, fuzz seed corpora)
test: vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt wants to reformat: $$unformatted"; exit 1; fi
	$(GO) test -count=1 ./...

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
	@echo "make build: the proxy-wasm filter (plugin/, issue 3) is not written yet; nothing to build." >&2; exit 1

## run: the local gateway with mock providers
run:
	@echo "make run: the local gateway and mock providers (e2e/, issue 4) are not written yet." >&2; exit 1

clean:
	rm -rf $(DIST)
