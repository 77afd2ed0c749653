// Package ruleguest is a proxy-wasm filter that does what its plugin configuration says: for each callback,
// which header and body edits to make, whether to send a local reply or panic, and what to return. It plays
// the scenarios of the host rule table (internal/hostemu/rules.json): natively through internal/hostemu, and
// built for wasip1 (internal/v8host/ruleguest) under wazero and V8, so every host is held to the same table.
//
// The configuration is a JSON object keyed by callback: request_headers, request_body, request_trailers,
// response_headers, response_body, response_trailers. Each value is a Step.
package ruleguest

import (
	"encoding/json"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// Step is what one callback does.
type Step struct {
	Return      string `json:"return"`        // "pause" or "continue" (default)
	ReturnAtEOS string `json:"return_at_eos"` // body callbacks at end_of_stream (default: Return)
	Ops         []Op   `json:"ops"`           // on every call
	OpsAtEOS    []Op   `json:"ops_at_eos"`    // body callbacks at end_of_stream only
}

// Op is one host call, or a panic.
type Op struct {
	Op      string      `json:"op"` // set_header, remove_header, replace_body, append_body, local_reply, panic
	Map     string      `json:"map"`
	Name    string      `json:"name"`
	Value   string      `json:"value"`
	Which   string      `json:"which"` // request or response
	Data    string      `json:"data"`
	Status  int         `json:"status"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"`
	Message string      `json:"message"`
}

// Script is the whole configuration.
type Script map[string]Step

// VM returns the filter's VM context.
func VM() types.VMContext { return &vm{} }

type vm struct{ types.DefaultVMContext }

func (*vm) NewPluginContext(uint32) types.PluginContext { return &plugin{} }

type plugin struct {
	types.DefaultPluginContext
	script Script
}

func (p *plugin) OnPluginStart(int) types.OnPluginStartStatus {
	data, err := proxywasm.GetPluginConfiguration()
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogCriticalf("ruleguest: %v", err)
		return types.OnPluginStartStatusFailed
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &p.script); err != nil {
			proxywasm.LogCriticalf("ruleguest: %v", err)
			return types.OnPluginStartStatusFailed
		}
	}
	return types.OnPluginStartStatusOK
}

func (p *plugin) NewHttpContext(uint32) types.HttpContext { return &http{script: p.script} }

type http struct {
	types.DefaultHttpContext
	script Script
}

func (h *http) run(callback string, eos bool) types.Action {
	step := h.script[callback]
	ret := step.Return
	do(step.Ops)
	if eos {
		do(step.OpsAtEOS)
		if step.ReturnAtEOS != "" {
			ret = step.ReturnAtEOS
		}
	}
	if ret == "pause" {
		return types.ActionPause
	}
	return types.ActionContinue
}

func do(ops []Op) {
	for _, op := range ops {
		var err error
		switch op.Op {
		case "set_header":
			err = setHeader(op.Map, op.Name, op.Value)
		case "remove_header":
			err = removeHeader(op.Map, op.Name)
		case "replace_body":
			if op.Which == "request" {
				err = proxywasm.ReplaceHttpRequestBody([]byte(op.Data))
			} else {
				err = proxywasm.ReplaceHttpResponseBody([]byte(op.Data))
			}
		case "append_body":
			if op.Which == "request" {
				err = proxywasm.AppendHttpRequestBody([]byte(op.Data))
			} else {
				err = proxywasm.AppendHttpResponseBody([]byte(op.Data))
			}
		case "local_reply":
			err = proxywasm.SendHttpResponse(uint32(op.Status), op.Headers, []byte(op.Body), -1)
		case "panic":
			panic("ruleguest: " + op.Message)
		default:
			panic("ruleguest: unknown op " + op.Op)
		}
		if err != nil {
			proxywasm.LogErrorf("ruleguest: %s %s %s: %v", op.Op, op.Map, op.Name, err)
		}
	}
}

func setHeader(m, name, value string) error {
	switch m {
	case "request_headers":
		return proxywasm.ReplaceHttpRequestHeader(name, value)
	case "response_headers":
		return proxywasm.ReplaceHttpResponseHeader(name, value)
	case "request_trailers":
		return proxywasm.ReplaceHttpRequestTrailer(name, value)
	case "response_trailers":
		return proxywasm.ReplaceHttpResponseTrailer(name, value)
	}
	panic("ruleguest: unknown map " + m)
}

func removeHeader(m, name string) error {
	switch m {
	case "request_headers":
		return proxywasm.RemoveHttpRequestHeader(name)
	case "response_headers":
		return proxywasm.RemoveHttpResponseHeader(name)
	case "request_trailers":
		return proxywasm.RemoveHttpRequestTrailer(name)
	case "response_trailers":
		return proxywasm.RemoveHttpResponseTrailer(name)
	}
	panic("ruleguest: unknown map " + m)
}

func (h *http) OnHttpRequestHeaders(_ int, eos bool) types.Action {
	return h.run("request_headers", eos)
}

func (h *http) OnHttpRequestBody(_ int, eos bool) types.Action { return h.run("request_body", eos) }

func (h *http) OnHttpRequestTrailers(int) types.Action { return h.run("request_trailers", false) }

func (h *http) OnHttpResponseHeaders(_ int, eos bool) types.Action {
	return h.run("response_headers", eos)
}

func (h *http) OnHttpResponseBody(_ int, eos bool) types.Action { return h.run("response_body", eos) }

func (h *http) OnHttpResponseTrailers(int) types.Action { return h.run("response_trailers", false) }
