//go:build aidialect_no_bridge

package translate

// Built without the Responses bridge (the build tag aidialect_no_bridge): a Responses request toward a
// target without the Responses API is refused locally, naming what to do. The Responses API toward providers
// that have it is served as ever (responses.go).

// Bridge stands for the bridge's state in a RequestBody; nothing makes one.
type Bridge struct{}

func (*Bridge) footprint() int { return 0 }

// bridgedRequests refuses what the bridge would have rendered.
var bridgedRequests = noBridge{}

type noBridge struct{}

func (noBridge) renderHead(*ClientRequest, *Target) (UpstreamHead, *Error) {
	return UpstreamHead{}, noBridgeRefusal()
}

func (noBridge) renderBody([]byte, *ClientRequest, *RequestBody, *Target) (UpstreamBody, *Error) {
	return UpstreamBody{}, noBridgeRefusal()
}

func noBridgeRefusal() *Error {
	return NewError(ErrUnsupportedOperation, "", "the provider for this model has no Responses API, and this "+
		"gateway was built without the bridge to chat completions (build tag aidialect_no_bridge): use "+
		"/v1/chat/completions, or a model served with the Responses API")
}
