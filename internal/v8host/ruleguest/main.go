// Command ruleguest is internal/hostemu/ruleguest built as a proxy-wasm module, the way dist/aidialect.wasm is
// built (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared): the guest that plays the host rule table's
// scenarios under wazero and V8 (TestRuleTableUnderV8).
package main

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/aidialect/aidialect/internal/hostemu/ruleguest"
)

func main() {}

func init() { proxywasm.SetVMContext(ruleguest.VM()) }
