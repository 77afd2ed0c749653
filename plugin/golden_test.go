package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/goldencase"
)

const goldenHost = "provider.test"
const goldenProviderName = "upstream"

// goldenConfig turns a golden case's provider into a plugin configuration that routes every model to it.
func goldenConfig(t *testing.T, c goldencase.Case) string {
	t.Helper()
	provider := c.Provider.PluginProvider(goldenProviderName, goldenHost, "*")
	set := func(m map[string]any, key, value string) {
		if value != "" {
			m[key] = value
		}
	}
	cfg := map[string]any{"providers": []any{provider}}
	set(cfg, "onchain_data", c.OnchainData)
	set(cfg, "path_prefix", c.PathPrefix)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// split cuts s into pieces of at most n bytes.
func split(s []byte, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		out = append(out, string(s[:k]))
		s = s[k:]
	}
	return out
}

// TestGoldenCasesThroughTheFilter replays every testdata/cases folder through the filter, in both modes, with
// the request and the answer cut into chunks, and compares with the same expected files translate is
// held to.
func TestGoldenCasesThroughTheFilter(t *testing.T) {
	cases, err := goldencase.Load(goldencase.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) { runGoldenCase(t, md, c) })
			}
		})
	}
}

func runGoldenCase(t *testing.T, md mode, c goldencase.Case) {
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	status, _ := strconv.Atoi(resp.First)
	wantUp, upstreamExpected, err := c.Expected("upstream_request.http")
	if err != nil {
		t.Fatal(err)
	}
	wantClient, _, err := c.Expected("client_response.http")
	if err != nil {
		t.Fatal(err)
	}
	var headers [][2]string
	for _, h := range req.Headers {
		if h[0] != "content-length" {
			headers = append(headers, h)
		}
	}
	for _, chunkSize := range []int{1 << 20, 61} {
		o := run(t, md, exchange{
			config:  goldenConfig(t, c),
			method:  method,
			path:    path,
			headers: headers,
			body:    split(req.Body, max(len(req.Body)/2+1, 1)),
			upstream: &upstreamAnswer{status: status, headers: resp.Headers,
				chunks: split(resp.Body, chunkSize)},
		})
		o.assertRules(t)
		if !upstreamExpected {
			if o.local == nil {
				t.Fatalf("expected a local reply, the request went upstream: %s", o.upstreamBody)
			}
		} else {
			if o.upstreamCalls != 1 {
				t.Fatalf("no upstream request (local reply %d %s)", o.status, o.clientBody)
			}
			checkUpstream(t, o, wantUp)
		}
		checkClient(t, o, wantClient)
	}
}

func checkUpstream(t *testing.T, o *outcome, want goldencase.Message) {
	t.Helper()
	_, wantPath, _ := strings.Cut(want.First, " ")
	if got := o.upstreamHead[":path"]; got != wantPath {
		t.Errorf(":path %q, want %q", got, wantPath)
	}
	if got := o.upstreamHead[":authority"]; got != goldenHost {
		t.Errorf(":authority %q, want %q", got, goldenHost)
	}
	if got := o.upstreamHead[defaultRoutingHeader]; got != goldenProviderName {
		t.Errorf("routing header %q, want %q", got, goldenProviderName)
	}
	if o.routeClears == 0 {
		t.Errorf("clear_route_cache was not called after the header edits")
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if got := o.upstreamHead[h[0]]; got != h[1] {
			t.Errorf("upstream header %s = %q, want %q", h[0], got, h[1])
		}
	}
	for _, name := range []string{"authorization", "api-key", "accept-encoding", "openai-organization", "extra-parameters", "azureml-model-deployment"} {
		if _, has := o.upstreamHead[name]; has && want.Header(name) == "" {
			t.Errorf("upstream request carries %s: %q", name, o.upstreamHead[name])
		}
	}
	if !bytes.Equal(o.upstreamBody, want.Body) {
		t.Errorf("upstream body\n got %s\nwant %s", o.upstreamBody, want.Body)
	}
}

func checkClient(t *testing.T, o *outcome, want goldencase.Message) {
	t.Helper()
	if got := strconv.Itoa(o.status); got != want.First {
		t.Errorf("client status %s, want %s (body %s)", got, want.First, o.clientBody)
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if got := o.clientHead[h[0]]; got != h[1] {
			t.Errorf("client header %s = %q, want %q", h[0], got, h[1])
		}
	}
	if !bytes.Equal(o.clientBody, want.Body) {
		t.Errorf("client body\n got %s\nwant %s", o.clientBody, want.Body)
	}
}
