module github.com/aidialect/aidialect/e2e

go 1.26.0

require (
	github.com/Azure/azure-sdk-for-go/sdk/ai/azopenai v0.7.2
	github.com/Azure/azure-sdk-for-go/sdk/azcore v1.23.3
	github.com/aidialect/aidialect v0.0.0
	github.com/openai/openai-go/v3 v3.96.0
	github.com/proxy-wasm/proxy-wasm-go-sdk v0.0.0-20260105142703-44c7d5847745
	github.com/tidwall/gjson v1.20.0
	github.com/tidwall/sjson v1.2.5
)

require (
	github.com/Azure/azure-sdk-for-go/sdk/internal v1.13.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/tetratelabs/wazero v1.7.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/aidialect/aidialect => ../
