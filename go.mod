module github.com/aidialect/aidialect

go 1.24

require (
	github.com/proxy-wasm/proxy-wasm-go-sdk v0.0.0-20260105142703-44c7d5847745
	github.com/tetratelabs/wazero v1.7.2
	github.com/tidwall/gjson v1.20.0
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
)

replace github.com/tidwall/pretty => ./third_party/pretty
