# aidialect: the two commands a new user needs are `make run` and `make test`.
GO        ?= go
FUZZTIME  ?= 60s
BENCHTIME ?= 1s
DIST      := dist
WASM      := $(DIST)/aidialect.wasm
# The filter must stay small enough for Envoy to fetch and compile quickly (budget: 5 MiB).
MAX_WASM_BYTES := 5242880
NODE_DIR  := e2e/node
# The agent clients (the Codex CLI, whose native binary is an optional dependency of about 315 MB, and the OpenAI
# Agents SDK with openai 7.x), kept apart from e2e/node, which pins openai 6.x.
AGENTS_DIR := e2e/agents
# Go modules of the repository: the filter, the end-to-end suite, the deployment-file checks (and the same
# checks with the protos the oldest supported Istio pins), and the filter's stand-in for tidwall/pretty.
MODULES   := . e2e envoy envoy/floor/istio128 third_party/pretty

.PHONY: all build test vet fmt-check bench fuzz run run-budgets clean node-deps e2e-envoy

all: test

## build: the Envoy filter, dist/aidialect.wasm
build:
	@mkdir -p $(DIST)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags="-s -w" -o $(WASM) ./plugin
	@size=$$(wc -c < $(WASM)); echo "$(WASM): $$size bytes (budget $(MAX_WASM_BYTES))"; \
	if [ $$size -gt $(MAX_WASM_BYTES) ]; then echo "$(WASM) is over its size budget" >&2; exit 1; fi

## run: builds dist/aidialect.wasm (in this working tree), then the local gateway running it on 127.0.0.1:8080 in
## front of four mock providers, and the same demo without default_provider on 127.0.0.1:8081; prints the models
## and curls. CONFIG=file.json: your configuration, real providers, curls for its models. RUNFLAGS: more flags
## for the local gateway (-consumer name=key, -upstream provider=url; README "Two commands").
run: build
	cd e2e && $(GO) run ./cmd/local -wasm ../$(WASM) $(if $(CONFIG),-config $(abspath $(CONFIG))) $(RUNFLAGS)

## run-budgets: make run with token budgets: also starts Redis (Debian's redis-server) and Envoy's rate-limit
## service (built from its pinned module the first time), and the banner shows a consumer's budget running out
run-budgets: build
	cd e2e && $(GO) run ./cmd/local -wasm ../$(WASM) -budgets $(RUNFLAGS)

## test: every test: translate, the filter natively and as the compiled .wasm (under wazero, and under V8 in
## Node: internal/v8host replays the golden cases), e2e with Go and npm SDKs, deployment files, the
## tidwall/pretty stand-in (third_party/pretty)
test: fmt-check vet build node-deps
	AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -count=1 ./...
	$(GO) test -count=1 -tags aidialect_faults -run 'Fault' ./plugin
	$(GO) test -count=1 -tags aidialect_opcount -run 'Linear|Counts' ./translate/ ./internal/...
	$(GO) vet -tags aidialect_no_bridge ./translate/ ./plugin/
	$(GO) test -count=1 -tags aidialect_no_bridge -run 'NoBridge' ./translate/
	cd e2e && AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -count=1 ./...
	cd envoy && $(GO) test -count=1 ./...
	cd envoy/floor/istio128 && $(GO) test -count=1 ./...
	cd third_party/pretty && $(GO) test -count=1 ./...

fmt-check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/node_modules/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt wants to reformat: $$unformatted" >&2; exit 1; fi

vet:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

node-deps: $(NODE_DIR)/node_modules/.package-lock.json $(AGENTS_DIR)/node_modules/.package-lock.json

$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund

$(AGENTS_DIR)/node_modules/.package-lock.json: $(AGENTS_DIR)/package-lock.json $(AGENTS_DIR)/package.json
	cd $(AGENTS_DIR) && npm ci --no-audit --no-fund

## e2e-envoy: the same e2e client suites against a real Envoy in docker-compose (needs a Docker engine)
e2e-envoy: build
	docker compose -f e2e/docker-compose.yaml up --build --abort-on-container-exit --exit-code-from tests; \
	status=$$?; docker compose -f e2e/docker-compose.yaml down; exit $$status

## bench: hot-path benchmarks (native translate, and the whole filter in the compiled .wasm, under wazero and
## under V8 in Node) beside their floors, as a table of ratios; raw output in dist/bench.txt (compare runs with
## benchstat); memory over 100,000 requests in dist/memory.txt (wazero) and dist/memory-v8.txt (V8)
bench: build
	@( $(GO) test -run='^$$' -bench=. -benchmem -count=3 -benchtime=$(BENCHTIME) ./translate/ ./internal/sse/ ./internal/redact/ && \
	   AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -run='^$$' -bench='WasmLifecycle|PluginStart' -benchmem -count=5 ./bench/ && \
	   AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -run='^$$' -bench=Instantiate -benchmem -benchtime=3x ./bench/ && \
	   AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -run='^$$' -bench='V8Lifecycle|WazeroLifecycle' -count=5 -benchtime=$(BENCHTIME) ./internal/v8host/ \
	 ) > $(DIST)/bench.txt
	$(GO) run ./tools/benchtable < $(DIST)/bench.txt
	@AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -count=1 -run='^TestMemory$$' -v ./bench/ > $(DIST)/memory.txt; \
	status=$$?; grep -Ev '^=== RUN' $(DIST)/memory.txt; exit $$status
	@AIDIALECT_V8_MEMORY=1 AIDIALECT_WASM=$(abspath $(WASM)) $(GO) test -count=1 -run='^TestV8Memory$$' -v ./internal/v8host/ > $(DIST)/memory-v8.txt; \
	status=$$?; grep -Ev '^=== RUN' $(DIST)/memory-v8.txt; exit $$status

## fuzz: every fuzz target (go test -list) of translate/ and internal/... for FUZZTIME each (make fuzz
## FUZZTIME=5m), all of them whatever the earlier ones did. Fails only for a finding: a new reproducer under
## <package>/testdata/fuzz/<Target>/, or a target failing on its seed corpus. A run that fails without either
## is a hiccup of Go's fuzzing coordinator (golang/go#75804): named in the summary, not a failure.
fuzz:
	$(GO) run ./tools/fuzzall -go "$(GO)" -fuzztime $(FUZZTIME) ./translate/ ./internal/...

clean:
	rm -rf $(DIST) $(NODE_DIR)/node_modules $(AGENTS_DIR)/node_modules
