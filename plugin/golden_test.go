package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/goldencase"
)

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
	want, err := c.Want()
	if err != nil {
		t.Fatal(err)
	}
	config, err := c.PluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	var headers [][2]string
	for _, h := range req.Headers {
		if h[0] != "content-length" {
			headers = append(headers, h)
		}
	}
	for _, answer := range []struct {
		chunkSize   int
		endWithLast bool
	}{{1 << 20, false}, {61, false}, {61, true}} {
		o := run(t, md, exchange{
			config:  config,
			method:  method,
			path:    path,
			headers: headers,
			body:    split(req.Body, max(len(req.Body)/2+1, 1)),
			upstream: &upstreamAnswer{status: status, headers: resp.Headers,
				chunks: split(resp.Body, answer.chunkSize), endWithLast: answer.endWithLast},
		})
		o.assertRules(t)
		if !want.Upstreamed {
			if o.local == nil {
				t.Fatalf("expected a local reply, the request went upstream: %s", o.upstreamBody)
			}
		} else {
			if o.upstreamCalls != 1 {
				t.Fatalf("no upstream request (local reply %d %s)", o.status, o.clientBody)
			}
			checkUpstream(t, o, want.Upstream)
		}
		checkClient(t, o, want.Client)
	}
}

// checkUpstream and checkClient hold the outcome to the case's expected files with the checks internal/v8host
// holds the filter to under V8 (goldencase.CheckUpstream, goldencase.CheckClient).
func checkUpstream(t *testing.T, o *outcome, want goldencase.Message) {
	t.Helper()
	goldencase.CheckUpstream(t, "", o.seen(), want)
}

func checkClient(t *testing.T, o *outcome, want goldencase.Message) {
	t.Helper()
	goldencase.CheckClient(t, "", o.seen(), want)
}

// seen is the outcome in the golden checks' terms; the provider is read from the filter's default routing
// header.
func (o *outcome) seen() goldencase.Seen {
	return goldencase.Seen{
		UpstreamHead: o.upstreamHead, UpstreamBody: o.upstreamBody,
		Provider: o.upstreamHead[defaultRoutingHeader], RouteClears: o.routeClears,
		Status: o.status, ClientHead: o.clientHead, ClientBody: o.clientBody,
	}
}
