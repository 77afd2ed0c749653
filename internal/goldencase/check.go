package goldencase

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The golden cases through the whole filter. plugin/golden_test.go replays them natively and under wazero,
// internal/v8host under V8; the configuration they run under and the checks of what the filter sent are here
// once, so that every host is held to the same expectations (the plugin is a main package: its tests cannot
// be imported). Nothing here imports testing: T is the part of it the checks use.

const (
	// UpstreamHost is the host every case's provider is configured at.
	UpstreamHost = "provider.test"
	// ProviderName is the name of every case's provider in the configuration.
	ProviderName = "upstream"
	// RoutingHeader is the filter's default routing header (the plugin's defaultRoutingHeader), which names
	// the chosen provider in the upstream request; a host outside the plugin reads the choice there.
	RoutingHeader = "x-aidialect-provider"
)

// PluginConfig is the filter configuration of the case: its provider, named ProviderName at UpstreamHost,
// serving every model, and the case's onchain_data and path_prefix.
func (c Case) PluginConfig() (string, error) {
	// Health off: a case is one exchange's translation, replayed many times on one host; a case whose
	// upstream answers 429 or 503 would otherwise bench its provider for the replays after it.
	cfg := map[string]any{"providers": []any{c.Provider.PluginProvider(ProviderName, UpstreamHost, "*")},
		"failover": map[string]any{"health": "off"}}
	if c.OnchainData != "" {
		cfg["onchain_data"] = c.OnchainData
	}
	if c.PathPrefix != "" {
		cfg["path_prefix"] = c.PathPrefix
	}
	raw, err := json.Marshal(cfg)
	return string(raw), err
}

// Want is what a case expects of the filter.
type Want struct {
	Upstream Message // the request as the upstream gets it; read when Upstreamed
	// Upstreamed is false when the filter answers the case itself (the case has no upstream_request.http).
	Upstreamed bool
	Client     Message // the answer as the client gets it
}

// Want reads the case's expected outputs.
func (c Case) Want() (Want, error) {
	var w Want
	var err error
	if w.Upstream, w.Upstreamed, err = c.Expected("upstream_request.http"); err != nil {
		return w, err
	}
	w.Client, _, err = c.Expected("client_response.http")
	return w, err
}

// Seen is what a host observed of one exchange, in the terms the checks compare.
type Seen struct {
	UpstreamHead map[string]string // the request's headers as the upstream got them, by lower-case name
	UpstreamBody []byte
	Provider     string // the provider the filter routed to: the routing header's value upstream
	RouteClears  int    // clear_route_cache calls
	Status       int    // the answer as the client got it
	ClientHead   map[string]string
	ClientBody   []byte
}

// T is the part of testing.TB the checks use.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

// CheckUpstream holds the upstream request to want: path, authority and routing to the case's provider,
// clear_route_cache called after the header edits, want's headers (content-length aside), no credential or
// provider header want does not have, and the body byte for byte. where, when not empty, prefixes each
// error.
func CheckUpstream(t T, where string, s Seen, want Message) {
	t.Helper()
	errorf := prefixed(t, where)
	_, wantPath, _ := strings.Cut(want.First, " ")
	if got := s.UpstreamHead[":path"]; got != wantPath {
		errorf(":path %q, want %q", got, wantPath)
	}
	if got := s.UpstreamHead[":authority"]; got != UpstreamHost {
		errorf(":authority %q, want %q", got, UpstreamHost)
	}
	if s.Provider != ProviderName {
		errorf("routing header %q, want %q", s.Provider, ProviderName)
	}
	if s.RouteClears == 0 {
		errorf("clear_route_cache was not called after the header edits")
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if got := s.UpstreamHead[h[0]]; got != h[1] {
			errorf("upstream header %s = %q, want %q", h[0], got, h[1])
		}
	}
	for _, name := range []string{"authorization", "api-key", "accept-encoding", "openai-organization", "extra-parameters", "azureml-model-deployment"} {
		if _, has := s.UpstreamHead[name]; has && want.Header(name) == "" {
			errorf("upstream request carries %s: %q", name, s.UpstreamHead[name])
		}
	}
	if !bytes.Equal(s.UpstreamBody, want.Body) {
		errorf("upstream body\n got %s\nwant %s", s.UpstreamBody, want.Body)
	}
}

// CheckClient holds the client's answer to want: status, want's headers (content-length aside) and the body
// byte for byte. where, when not empty, prefixes each error.
func CheckClient(t T, where string, s Seen, want Message) {
	t.Helper()
	errorf := prefixed(t, where)
	if got := strconv.Itoa(s.Status); got != want.First {
		errorf("client status %s, want %s (body %s)", got, want.First, s.ClientBody)
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if got := s.ClientHead[h[0]]; got != h[1] {
			errorf("client header %s = %q, want %q", h[0], got, h[1])
		}
	}
	if !bytes.Equal(s.ClientBody, want.Body) {
		errorf("client body\n got %s\nwant %s", s.ClientBody, want.Body)
	}
}

func prefixed(t T, where string) func(format string, args ...any) {
	return func(format string, args ...any) {
		t.Helper()
		if where != "" {
			format, args = "%s: "+format, append([]any{where}, args...)
		}
		t.Errorf(format, args...)
	}
}
