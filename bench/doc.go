// Package bench measures the compiled filter, dist/aidialect.wasm, the way Envoy runs it: under wazero,
// through internal/hostemu's host rules, beside a floor filter (bench/floorfilter) built the same way that
// only buffers bodies and writes them back. Everything lives in the tests (see README.md):
//
//	go test -run='^$' -bench='WasmLifecycle|PluginStart' -benchmem -count=5 ./bench  # filter / floor
//	go test -run='^$' -bench=Instantiate -benchmem -benchtime=3x ./bench              # module start
//	go test -count=1 -run='^TestMemory$' -v ./bench                                   # 100,000 requests
//
// Figures that matter are ratios taken in the same run (filter / floor); nothing here asserts a time.
package bench
