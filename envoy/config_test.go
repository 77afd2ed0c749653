// Package envoyconfig_test validates the deployment assets in this directory without an Envoy binary.
//
//	cd envoy && go test ./...
//
// What is checked (details on each test):
//   - envoy.yaml: YAML -> JSON -> go-control-plane bootstrapv3.Bootstrap with strict protojson (unknown
//     fields, also inside every typed_config Any, are errors; every referenced type is registered by the
//     imports below), ValidateAll() (protoc-gen-validate rules), no field or enum value marked deprecated,
//     then the cross-checks the proto rules cannot express (routes <-> clusters <-> providers, TLS names,
//     wasm filter settings, stats tags against sample metric names, buffer limit vs max_request_bytes).
//   - The plugin configuration embedded in every deployment file: strict JSON against the keys the
//     filter defines (README.md "Configuration"; unknown keys fail), the filter's own value rules, no
//     inline secret, identical everywhere.
//   - istio/*.yaml (istio_test.go) and gateway/*.yaml (gateway_test.go): strict parse into the upstream
//     API types plus the same cross-checks.
//   - TestBrokenEnvoyYAMLIsRejected (and its Istio and Gateway siblings) prove the pipeline bites: each
//     case breaks a copy of the real file in memory and must fail with the expected message.
//
// API versions (go.mod): the Envoy API is go-control-plane envoy v1.35.0, i.e. the minimum Envoy this
// deployment supports, so a field that only exists in a newer Envoy fails here. Envoy Gateway's API is
// v1.5.0 (its Go types have the same fields as v1.5.5's, the supported minimum). istio.io/api is v1.31.1,
// newer than the supported minimum, Istio 1.28, whose own parser is checked apart, in its own module
// because one module can hold only one version of go-control-plane: floor/istio128 (istio.io/api and
// go-control-plane exactly as Istio 1.28.0 pins them). Run it too: `cd floor/istio128 && go test ./...`
// (`make test` runs both). Envoy Gateway v1.5.5 needs no module of its own: the revisions it pins are not
// served by the module proxy here, and between them and this module's (go-control-plane envoy v1.35.0,
// gateway v1.5.0) the APIs differ in no field these files use; if go.mod moves off those versions, give
// Envoy Gateway's floor a module like istio128's.
//
// Cost, measured with empty GOMODCACHE and GOCACHE on a 2-vCPU machine shared with other jobs:
// `go mod download` 7 s (306 MB), then the first `go test ./...` 121 s (load average 3-5); about 400 s
// when the machine was saturated (load 10). The first run is compilation: of about 165 CPU-seconds of
// package builds, the standard library takes 58 (shared with any other Go job in the same CI cache),
// the Kubernetes / Gateway API / Envoy Gateway types about 50, go-control-plane about 20, protobuf
// and genproto 11, ojg 6. With a warm GOCACHE a run takes about 3 s.
package envoyconfig_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	earlymutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/wasm/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	// Types that envoy.yaml and the patches reference only through Any (typed_config). Importing the
	// package registers the message in protoregistry.GlobalTypes; without it protojson fails with
	// "unable to resolve type", which is what an unsupported or misspelled @type should do.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
)

// The deployment's fixed names.
const (
	routingHeader      = "x-aidialect-provider"
	pluginName         = "aidialect"
	wasmFile           = "/etc/envoy/aidialect.wasm"
	caBundle           = "/etc/ssl/certs/ca-certificates.crt"
	ociImage           = "oci://ghcr.io/aidialect/aidialect:latest"
	wasmTypeURL        = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"
	earlyMutationName  = "envoy.http.early_header_mutation.header_mutation"
	bufferLimitBytes   = 16 << 20
	wantDirectNotFound = 404
	// Every provider cluster gets explicit circuit-breaker thresholds within these bounds. Envoy's default
	// (1024 connections, pending and active requests per cluster) turns the 1025th concurrent
	// minutes-long stream into a 503; Istio's default (4294967295) bounds nothing.
	minCircuitBreaker = 4096
	maxCircuitBreaker = 1 << 20
)

// The metric labels the filter encodes in its metric names.
var wantTagNames = []string{"change", "client_dialect", "code", "consumer", "from", "gen_ai.operation.name", "gen_ai.provider.name",
	"gen_ai.request.model", "gen_ai.token.type", "model", "provider", "reason", "result", "status_class", "to"}

// --- plugin configuration (README.md, "Configuration") ---

// pluginConfig lists every key the filter defines; decoding with DisallowUnknownFields turns any other
// key, at any depth, into an error, as the filter itself does at start.
//
//	top level: providers, default_provider, consumers, routing_header, path_prefix, max_request_bytes,
//	           onchain_data, unknown_paths
//	provider:  name, dialect, host, base_path, api_key, api_key_env, auth, api_version,
//	           extra_parameters, chain_id, models
//	model:     name, model, deployment, chain_id
//	consumer:  name, key_sha256, models
type pluginConfig struct {
	Providers       []providerConfig `json:"providers"`
	DefaultProvider string           `json:"default_provider,omitempty"`
	Consumers       []consumerConfig `json:"consumers,omitempty"`
	RoutingHeader   string           `json:"routing_header,omitempty"`
	PathPrefix      string           `json:"path_prefix,omitempty"`
	MaxRequestBytes *int64           `json:"max_request_bytes,omitempty"`
	// max_event_bytes and usage: see README "Configuration".
	MaxEventBytes *int64 `json:"max_event_bytes,omitempty"`
	OnchainData   string `json:"onchain_data,omitempty"`
	UnknownPaths  string `json:"unknown_paths,omitempty"`
	Usage         string `json:"usage,omitempty"`
}

type providerConfig struct {
	Name            string        `json:"name"`
	Dialect         string        `json:"dialect"`
	Host            string        `json:"host"`
	BasePath        string        `json:"base_path,omitempty"`
	APIKey          string        `json:"api_key,omitempty"`
	APIKeyEnv       string        `json:"api_key_env,omitempty"`
	Auth            string        `json:"auth,omitempty"`
	APIVersion      string        `json:"api_version,omitempty"`
	ExtraParameters string        `json:"extra_parameters,omitempty"`
	ChainID         string        `json:"chain_id,omitempty"`
	Models          []modelConfig `json:"models"`
}

type modelConfig struct {
	Name       string `json:"name"`
	Model      string `json:"model,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	ChainID    string `json:"chain_id,omitempty"`
}

type consumerConfig struct {
	Name      string   `json:"name"`
	KeySHA256 string   `json:"key_sha256"`
	Models    []string `json:"models,omitempty"`
}

// parsePluginConfig decodes the configuration strictly against the filter's keys (for the cross-checks
// below), applies the deployment rule that secrets never appear inline, and has the filter itself judge
// every value: `go run ./plugin check-config` runs the same validation as OnPluginStart, so this test and
// the filter cannot disagree.
func parsePluginConfig(raw []byte) (*pluginConfig, error) {
	var cfg pluginConfig
	if err := decodeJSONStrict(raw, &cfg); err != nil {
		return nil, fmt.Errorf("plugin configuration: %w", err)
	}
	var errs []error
	for i, p := range cfg.Providers {
		if p.APIKey != "" {
			errs = append(errs, fmt.Errorf("plugin configuration: providers[%d] (%s): api_key puts a secret into the configuration; use api_key_env (VM environment)", i, p.Name))
		}
	}
	if err := filterAccepts(raw, envKeys(&cfg)); err != nil {
		errs = append(errs, fmt.Errorf("plugin configuration: %w", err))
	}
	return &cfg, errors.Join(errs...)
}

var (
	checkerOnce sync.Once
	checker     string // the natively built filter, whose check-config command validates a configuration
	checkerErr  error
)

// filterAccepts runs the filter's own configuration check on raw, with a placeholder value for every
// api_key_env (the real keys live in Envoy's environment, not here).
func filterAccepts(raw []byte, envNames []string) error {
	checkerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aidialect-check")
		if err != nil {
			checkerErr = err
			return
		}
		checker = filepath.Join(dir, "aidialect-check")
		build := exec.Command("go", "build", "-o", checker, "./plugin")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			checkerErr = fmt.Errorf("building the filter's configuration check: %v\n%s", err, out)
		}
	})
	if checkerErr != nil {
		return checkerErr
	}
	cmd := exec.Command(checker, "check-config")
	cmd.Stdin = bytes.NewReader(raw)
	cmd.Env = os.Environ()
	for _, name := range envNames {
		cmd.Env = append(cmd.Env, name+"=placeholder-key-for-validation")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the filter refuses it: %s", bytes.TrimSpace(out))
	}
	return nil
}

// checkDeploymentPlugin adds what every deployment file's copy must satisfy beyond the filter's rules:
// the keys the deployment relies on are present (routes match routing_header, the default exists).
func checkDeploymentPlugin(raw []byte) (*pluginConfig, error) {
	cfg, err := parsePluginConfig(raw)
	if err != nil {
		return nil, err
	}
	var errs []error
	if cfg.RoutingHeader != routingHeader {
		errs = append(errs, fmt.Errorf("plugin configuration: routing_header must be %q (the routes match it)", routingHeader))
	}
	if cfg.DefaultProvider == "" {
		errs = append(errs, errors.New("plugin configuration: default_provider must be set"))
	}
	if cfg.MaxRequestBytes == nil {
		errs = append(errs, errors.New("plugin configuration: max_request_bytes must be set (the buffer limits are sized against it)"))
	}
	for _, p := range cfg.Providers {
		if p.APIKeyEnv == "" && p.Auth != "passthrough" {
			errs = append(errs, fmt.Errorf("plugin configuration: provider %s: keys come from api_key_env (or auth passthrough)", p.Name))
		}
	}
	return cfg, errors.Join(errs...)
}

func envKeys(cfg *pluginConfig) []string {
	var keys []string
	for _, p := range cfg.Providers {
		if p.APIKeyEnv != "" {
			keys = append(keys, p.APIKeyEnv)
		}
	}
	sort.Strings(keys)
	return keys
}

// sameJSON reports whether two JSON documents are equal as values (key order, spacing and number
// spelling aside).
func sameJSON(a, b []byte) (bool, error) {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}

// --- generic helpers ---

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeJSONStrict decodes JSON into a Go struct the way the Kubernetes API server does with strict
// field validation (sigs.k8s.io/json): unknown fields, duplicate fields and field names that differ
// only in case are all errors. (encoding/json alone matches names case-insensitively, so a misspelt
// "failopen" would silently fill FailOpen.)
func decodeJSONStrict(js []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// decodeYAMLStrict is decodeJSONStrict for YAML (duplicate keys rejected in the YAML too).
func decodeYAMLStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	return decodeJSONStrict(js, v)
}

// unmarshalProto decodes JSON strictly: protojson's zero options reject unknown fields, and resolve
// Any payloads through protoregistry.GlobalTypes (unknown @type = error).
func unmarshalProto(data []byte, m proto.Message) error {
	return protojson.UnmarshalOptions{}.Unmarshal(data, m)
}

// yamlToProto converts YAML (duplicate keys rejected) to JSON and decodes it strictly into m.
func yamlToProto(data []byte, m proto.Message) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	if err := unmarshalProto(js, m); err != nil {
		return fmt.Errorf("protojson %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// validateAll runs protoc-gen-validate's ValidateAll on m and on every message packed in an Any below
// it. The generated ValidateAll stops at Any fields (it checks only the type URL), so without the
// second part nothing inside a typed_config (the HTTP connection manager, the routes, the wasm
// filter, the TLS contexts) would be validated.
func validateAll(m proto.Message) error {
	var errs []error
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, fmt.Errorf("ValidateAll %s: %w", m.ProtoReflect().Descriptor().FullName(), err))
		}
	}
	forEachAny(m.ProtoReflect(), func(inner proto.Message) {
		if err := validateAll(inner); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// forEachAny calls fn with the unpacked payload of every Any directly below m (not below those
// payloads: fn recurses itself if it wants to). Unresolvable payloads cannot occur here: strict
// protojson already rejected them.
func forEachAny(m protoreflect.Message, fn func(proto.Message)) {
	visit := func(v protoreflect.Value) {
		sub := v.Message()
		if sub.Descriptor().FullName() == "google.protobuf.Any" {
			if inner, err := anypb.UnmarshalNew(sub.Interface().(*anypb.Any), proto.UnmarshalOptions{}); err == nil {
				fn(inner)
			}
			return
		}
		forEachAny(sub, fn)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				visit(v.List().Get(i))
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				visit(mv)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			visit(v)
		}
		return true
	})
}

// deprecatedUses lists every set field, and every enum value, marked `deprecated` in the Envoy API,
// descending into Any payloads. Envoy warns about them today and rejects them in a later release.
func deprecatedUses(m protoreflect.Message, path string) []string {
	var out []string
	if m.Descriptor().FullName() == "google.protobuf.Any" {
		inner, err := anypb.UnmarshalNew(m.Interface().(*anypb.Any), proto.UnmarshalOptions{})
		if err != nil {
			return []string{path + ": " + err.Error()}
		}
		return deprecatedUses(inner.ProtoReflect(), path+"("+string(inner.ProtoReflect().Descriptor().FullName())+")")
	}
	checkEnum := func(fd protoreflect.FieldDescriptor, v protoreflect.Value, p string) {
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			if opts, ok := ev.Options().(*descriptorpb.EnumValueOptions); ok && opts.GetDeprecated() {
				out = append(out, p+"="+string(ev.Name()))
			}
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		if opts, ok := fd.Options().(*descriptorpb.FieldOptions); ok && opts.GetDeprecated() {
			out = append(out, p)
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				ip := fmt.Sprintf("%s[%d]", p, i)
				if fd.Message() != nil {
					out = append(out, deprecatedUses(l.Get(i).Message(), ip)...)
				} else if fd.Enum() != nil {
					checkEnum(fd, l.Get(i), ip)
				}
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					out = append(out, deprecatedUses(mv.Message(), p+"["+k.String()+"]")...)
					return true
				})
			}
		case fd.Message() != nil:
			out = append(out, deprecatedUses(v.Message(), p)...)
		case fd.Enum() != nil:
			checkEnum(fd, v, p)
		}
		return true
	})
	return out
}

// --- envoy.yaml ---

// envoyConfig is what the other deployment files are compared with.
type envoyConfig struct {
	bootstrap *bootstrapv3.Bootstrap
	pluginRaw []byte
	plugin    *pluginConfig
}

// loadEnvoy is the whole envoy.yaml pipeline: strict parse, ValidateAll, deprecations, cross-checks.
func loadEnvoy(data []byte) (*envoyConfig, error) {
	var b bootstrapv3.Bootstrap
	if err := yamlToProto(data, &b); err != nil {
		return nil, err
	}
	if err := validateAll(&b); err != nil {
		return nil, err
	}
	if dep := deprecatedUses(b.ProtoReflect(), "bootstrap"); len(dep) > 0 {
		return nil, fmt.Errorf("deprecated fields or values in use: %s", strings.Join(dep, ", "))
	}
	return checkEnvoy(&b)
}

func checkEnvoy(b *bootstrapv3.Bootstrap) (*envoyConfig, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// Admin on loopback only.
	if sa := b.GetAdmin().GetAddress().GetSocketAddress(); sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() != 9901 {
		bad("admin must listen on 127.0.0.1:9901, got %s:%d", sa.GetAddress(), sa.GetPortValue())
	}
	if err := checkStatsTags(b.GetStatsConfig().GetStatsTags()); err != nil {
		errs = append(errs, err)
	}

	listeners := b.GetStaticResources().GetListeners()
	if len(listeners) != 1 {
		return nil, fmt.Errorf("want exactly one listener, got %d", len(listeners))
	}
	l := listeners[0]
	if sa := l.GetAddress().GetSocketAddress(); sa.GetAddress() != "0.0.0.0" || sa.GetPortValue() != 10000 {
		bad("listener must be 0.0.0.0:10000, got %s:%d", sa.GetAddress(), sa.GetPortValue())
	}
	if len(l.GetFilterChains()) != 1 || len(l.GetFilterChains()[0].GetFilters()) != 1 {
		return nil, errors.New("listener must have one filter chain with one filter (the HTTP connection manager)")
	}
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return nil, fmt.Errorf("listener filter is not an HttpConnectionManager: %w", err)
	}
	if err := checkEarlyMutation(hcm.GetEarlyHeaderMutationExtensions()); err != nil {
		errs = append(errs, err)
	}

	// HTTP filters: exactly the wasm filter, then the router.
	filters := hcm.GetHttpFilters()
	if len(filters) != 2 || filters[0].GetName() != "envoy.filters.http.wasm" || filters[1].GetName() != "envoy.filters.http.router" {
		var names []string
		for _, f := range filters {
			names = append(names, f.GetName())
		}
		return nil, fmt.Errorf("http_filters must be [envoy.filters.http.wasm, envoy.filters.http.router], got %v", names)
	}
	var wasm wasmfilterv3.Wasm
	if err := filters[0].GetTypedConfig().UnmarshalTo(&wasm); err != nil {
		return nil, fmt.Errorf("wasm filter typed_config: %w", err)
	}
	var sv wrapperspb.StringValue
	if err := wasm.GetConfig().GetConfiguration().UnmarshalTo(&sv); err != nil {
		return nil, fmt.Errorf("wasm config: configuration must be a google.protobuf.StringValue: %w", err)
	}
	cfg, err := checkDeploymentPlugin([]byte(sv.GetValue()))
	if err != nil {
		return nil, err
	}
	pluginRaw, err := checkWasmConfig(wasm.GetConfig(), envKeys(cfg))
	if err != nil {
		return nil, err
	}
	if code := wasm.GetConfig().GetVmConfig().GetCode().GetLocal().GetFilename(); code != wasmFile {
		bad("wasm code must be the local file %s, got %q", wasmFile, code)
	}

	// The buffer limit must exceed what the filter itself accepts, so its own limit answers first.
	if got := l.GetPerConnectionBufferLimitBytes().GetValue(); got < bufferLimitBytes || int64(got) <= *cfg.MaxRequestBytes {
		bad("listener per_connection_buffer_limit_bytes is %d, want >= %d and > max_request_bytes (%d)", got, bufferLimitBytes, *cfg.MaxRequestBytes)
	}

	// Clusters by name.
	clusters := map[string]*clusterv3.Cluster{}
	for _, c := range b.GetStaticResources().GetClusters() {
		if clusters[c.GetName()] != nil {
			bad("duplicate cluster %q", c.GetName())
		}
		clusters[c.GetName()] = c
	}

	// Routes: one per provider (header match -> the provider's cluster), then a 404 catch-all.
	vhosts := hcm.GetRouteConfig().GetVirtualHosts()
	if len(vhosts) != 1 || !reflect.DeepEqual(vhosts[0].GetDomains(), []string{"*"}) {
		return nil, errors.New(`route_config must have one virtual host with domains ["*"] (the filter rewrites :authority)`)
	}
	routes := vhosts[0].GetRoutes()
	if len(routes) != len(cfg.Providers)+1 {
		bad("want %d routes (one per provider + catch-all), got %d", len(cfg.Providers)+1, len(routes))
	}
	routed := map[string]bool{}
	for i, r := range routes {
		if i == len(routes)-1 {
			if err := checkCatchAll(r); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		provider, err := routeProvider(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("route %d (%s): %w", i, r.GetName(), err))
			continue
		}
		routed[provider] = true
		ra := r.GetRoute()
		if ra.GetCluster() != provider {
			bad("route %s: cluster %q, want the provider's cluster %q", r.GetName(), ra.GetCluster(), provider)
		}
		if clusters[ra.GetCluster()] == nil {
			bad("route %s points to missing cluster %q", r.GetName(), ra.GetCluster())
		}
		if ra.GetTimeout() == nil || ra.GetTimeout().AsDuration() != 0 {
			bad("route %s: timeout must be 0s (streams), got %v", r.GetName(), ra.GetTimeout())
		}
		if rp := ra.GetRetryPolicy(); rp.GetPerTryIdleTimeout().AsDuration() <= 0 {
			bad("route %s: retry_policy.per_try_idle_timeout must be set: a provider silent that long before its first byte is then answered 504 by Envoy, which the filter fails over", r.GetName())
		} else {
			for _, on := range strings.Split(rp.GetRetryOn(), ",") {
				switch on = strings.TrimSpace(on); on {
				case "5xx", "gateway-error", "retriable-4xx", "retriable-status-codes", "reset", "reset-before-request":
				default:
					continue
				}
				if on == "reset-before-request" {
					continue // never reached the provider: safe, as connect-failure
				}
				bad("route %s: retry_on %q retries on the same provider what the filter fails over to another provider (or, for reset, a request the provider may already be billing)", r.GetName(), on)
			}
		}
		if ra.GetHostRewriteLiteral() != "" || ra.GetAutoHostRewrite().GetValue() {
			bad("route %s: no host rewrite (the filter sets :authority)", r.GetName())
		}
		if !contains(r.GetRequestHeadersToRemove(), routingHeader) {
			bad("route %s: the internal routing header must be removed before the request leaves", r.GetName())
		}
	}
	for _, p := range cfg.Providers {
		if !routed[p.Name] {
			bad("provider %s has no route", p.Name)
		}
		c := clusters[p.Name]
		if c == nil {
			bad("provider %s has no cluster", p.Name)
			continue
		}
		if err := checkCluster(c, p.Host); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", p.Name, err))
		}
		delete(clusters, p.Name)
	}
	for name := range clusters {
		bad("cluster %q belongs to no provider", name)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &envoyConfig{bootstrap: b, pluginRaw: pluginRaw, plugin: cfg}, nil
}

// checkWasmConfig checks the PluginConfig settings every deployment shape must share and returns the
// plugin configuration JSON. envKeys are the variables the configuration names (api_key_env): exactly
// these must reach the VM (the filter refuses to start when one is missing).
func checkWasmConfig(pc *wasmv3.PluginConfig, envKeys []string) ([]byte, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("wasm config: "+format, args...)) }
	if pc == nil {
		return nil, errors.New("wasm config: missing")
	}
	if pc.GetName() != pluginName || pc.GetRootId() != pluginName {
		bad("name and root_id must be %q, got %q and %q", pluginName, pc.GetName(), pc.GetRootId())
	}
	if !pc.GetAllowOnHeadersStopIteration().GetValue() {
		bad("allow_on_headers_stop_iteration must be true (body-routed requests hang without it)")
	}
	if pc.GetFailurePolicy() != wasmv3.FailurePolicy_FAIL_RELOAD || pc.GetFailOpen() {
		bad("failure_policy must be FAIL_RELOAD (and fail_open unset), got %v", pc.GetFailurePolicy())
	}
	vm := pc.GetVmConfig()
	if vm.GetRuntime() != "envoy.wasm.runtime.v8" {
		bad("runtime must be envoy.wasm.runtime.v8, got %q", vm.GetRuntime())
	}
	if keys := sortedCopy(vm.GetEnvironmentVariables().GetHostEnvKeys()); !reflect.DeepEqual(keys, envKeys) {
		bad("host_env_keys %v, want the api_key_env values %v", keys, envKeys)
	}
	if len(vm.GetEnvironmentVariables().GetKeyValues()) > 0 {
		bad("environment_variables.key_values would put values (secrets) into the config; use host_env_keys")
	}
	var sv wrapperspb.StringValue
	if err := pc.GetConfiguration().UnmarshalTo(&sv); err != nil {
		bad("configuration must be a google.protobuf.StringValue: %v", err)
	}
	return []byte(sv.GetValue()), errors.Join(errs...)
}

// routeProvider returns the provider a route is for: prefix "/" plus exactly one exact match on the
// routing header.
func routeProvider(r *routev3.Route) (string, error) {
	m := r.GetMatch()
	if m.GetPrefix() != "/" {
		return "", fmt.Errorf(`match must be prefix "/", got %v`, m.GetPathSpecifier())
	}
	hs := m.GetHeaders()
	if len(hs) != 1 || hs[0].GetName() != routingHeader || hs[0].GetStringMatch().GetExact() == "" || hs[0].GetInvertMatch() {
		return "", fmt.Errorf("must match exactly one header, %s, exactly", routingHeader)
	}
	if r.GetRoute() == nil {
		return "", errors.New("must forward to a cluster")
	}
	return hs[0].GetStringMatch().GetExact(), nil
}

func checkCatchAll(r *routev3.Route) error {
	dr := r.GetDirectResponse()
	if r.GetMatch().GetPrefix() != "/" || len(r.GetMatch().GetHeaders()) > 0 || dr == nil {
		return errors.New(`the last route must match prefix "/" without headers and answer directly`)
	}
	if dr.GetStatus() != wantDirectNotFound {
		return fmt.Errorf("catch-all status %d, want %d", dr.GetStatus(), wantDirectNotFound)
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(dr.GetBody().GetInlineString()), &body); err != nil || body.Error.Message == "" || body.Error.Code == "" {
		return fmt.Errorf("catch-all body must be an OpenAI-style error envelope: %v", err)
	}
	headers := map[string]string{}
	for _, h := range r.GetResponseHeadersToAdd() {
		headers[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	if headers["content-type"] != "application/json" || headers["x-aidialect-error"] != body.Error.Code {
		return fmt.Errorf("catch-all must set content-type application/json and x-aidialect-error %s, got %v", body.Error.Code, headers)
	}
	return nil
}

// checkCluster: the provider host on port 443 over TLS with SNI and SAN = host, system CAs, explicit
// HTTP protocol with a matching ALPN, and the raised buffer limit.
func checkCluster(c *clusterv3.Cluster, host string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.GetType() != clusterv3.Cluster_LOGICAL_DNS && c.GetType() != clusterv3.Cluster_STRICT_DNS {
		bad("type must be LOGICAL_DNS or STRICT_DNS, got %v", c.GetType())
	}
	var addrs []string
	for _, e := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range e.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			addrs = append(addrs, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
		}
	}
	if want := []string{host + ":443"}; !reflect.DeepEqual(addrs, want) {
		bad("endpoints %v, want %v", addrs, want)
	}
	if c.GetPerConnectionBufferLimitBytes().GetValue() < bufferLimitBytes {
		bad("per_connection_buffer_limit_bytes below %d", bufferLimitBytes)
	}
	var th *clusterv3.CircuitBreakers_Thresholds
	for _, t := range c.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority() == corev3.RoutingPriority_DEFAULT {
			th = t
		}
	}
	isHTTP1 := true
	if anyOpts := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; anyOpts != nil {
		var o upstreamhttpv3.HttpProtocolOptions
		if anyOpts.UnmarshalTo(&o) == nil && o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil {
			isHTTP1 = false
		}
	}
	if err := checkCircuitBreaker("circuit_breakers", map[string]*uint64{
		"max_connections":      u32(th.GetMaxConnections()),
		"max_pending_requests": u32(th.GetMaxPendingRequests()),
		"max_requests":         u32(th.GetMaxRequests()),
	}, "max_connections", "max_requests", isHTTP1); err != nil {
		errs = append(errs, err)
	}
	ts := c.GetTransportSocket()
	var tlsCtx tlsv3.UpstreamTlsContext
	if ts.GetName() != "envoy.transport_sockets.tls" || ts.GetTypedConfig().UnmarshalTo(&tlsCtx) != nil {
		bad("transport_socket must be envoy.transport_sockets.tls with an UpstreamTlsContext")
	}
	if tlsCtx.GetSni() != host {
		bad("sni %q, want %q", tlsCtx.GetSni(), host)
	}
	vc := tlsCtx.GetCommonTlsContext().GetValidationContext()
	if vc.GetTrustedCa().GetFilename() != caBundle {
		bad("trusted_ca must be %s", caBundle)
	}
	sans := vc.GetMatchTypedSubjectAltNames()
	if len(sans) != 1 || sans[0].GetSanType() != tlsv3.SubjectAltNameMatcher_DNS || sans[0].GetMatcher().GetExact() != host {
		bad("match_typed_subject_alt_names must be one DNS exact %q", host)
	}
	var opts upstreamhttpv3.HttpProtocolOptions
	anyOpts := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	if anyOpts == nil || anyOpts.UnmarshalTo(&opts) != nil || opts.GetExplicitHttpConfig() == nil {
		bad("needs explicit HttpProtocolOptions (http/1.1 or h2)")
	} else {
		wantALPN := []string{"http/1.1"}
		if opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil {
			wantALPN = []string{"h2"}
		}
		if got := tlsCtx.GetCommonTlsContext().GetAlpnProtocols(); !reflect.DeepEqual(got, wantALPN) {
			bad("alpn_protocols %v must match the explicit protocol (%v)", got, wantALPN)
		}
	}
	return errors.Join(errs...)
}

func u32(v *wrapperspb.UInt32Value) *uint64 {
	if v == nil {
		return nil
	}
	n := uint64(v.GetValue())
	return &n
}

// checkCircuitBreaker: every threshold is set explicitly and lies in [minCircuitBreaker,
// maxCircuitBreaker]; for an HTTP/1.1 upstream (one connection per active request) the connection
// limit is at least the request limit. what names the setting in the file; thresholds maps each field
// name to its value (nil = unset).
func checkCircuitBreaker(what string, thresholds map[string]*uint64, connField, reqField string, http1 bool) error {
	var errs []error
	for _, name := range sortedMapKeys(thresholds) {
		v := thresholds[name]
		switch {
		case v == nil:
			errs = append(errs, fmt.Errorf("%s: %s is not set: the default caps concurrent streams (Envoy: 1024) or bounds nothing (Istio: 4294967295); set it explicitly to %d..%d",
				what, name, minCircuitBreaker, maxCircuitBreaker))
		case *v < minCircuitBreaker:
			errs = append(errs, fmt.Errorf("%s: %s is %d, below %d: minutes-long streams would exhaust it (503)", what, name, *v, minCircuitBreaker))
		case *v > maxCircuitBreaker:
			errs = append(errs, fmt.Errorf("%s: %s is %d, unbounded in effect (above %d): nothing sheds load before the gateway runs out of memory", what, name, *v, maxCircuitBreaker))
		}
	}
	if c, r := thresholds[connField], thresholds[reqField]; http1 && c != nil && r != nil && *c < *r {
		errs = append(errs, fmt.Errorf("%s: %s (%d) below %s (%d): HTTP/1.1 needs one connection per active request", what, connField, *c, reqField, *r))
	}
	return errors.Join(errs...)
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkEarlyMutation: the client-supplied routing header is removed before routing.
func checkEarlyMutation(exts []*corev3.TypedExtensionConfig) error {
	for _, e := range exts {
		var hm earlymutationv3.HeaderMutation
		if e.GetName() != earlyMutationName || e.GetTypedConfig().UnmarshalTo(&hm) != nil {
			continue
		}
		for _, m := range hm.GetMutations() {
			if m.GetRemove() == routingHeader {
				return nil
			}
		}
	}
	return fmt.Errorf("early_header_mutation_extensions must remove a client-supplied %s", routingHeader)
}

// --- stats tags ---

// extractTags applies stats tags the way Envoy's regex tag extractor does: for each specifier a
// regex search on the full stat name; group 1 is removed from the name, group 2 (or group 1 when
// there is none) is the value. Envoy uses RE2/ECMAScript; Go's regexp is RE2, and the patterns here
// use only syntax the three share.
func extractTags(specs []*metricsv3.TagSpecifier, name string) (string, map[string]string, error) {
	tags := map[string]string{}
	remove := make([]bool, len(name))
	for _, s := range specs {
		re, err := regexp.Compile(s.GetRegex())
		if err != nil {
			return "", nil, fmt.Errorf("tag %s: regex is not RE2: %w", s.GetTagName(), err)
		}
		if re.NumSubexp() < 1 {
			return "", nil, fmt.Errorf("tag %s: regex needs a capture group", s.GetTagName())
		}
		loc := re.FindStringSubmatchIndex(name)
		if loc == nil || loc[2] < 0 {
			continue
		}
		value := name[loc[2]:loc[3]]
		if re.NumSubexp() >= 2 && loc[4] >= 0 {
			value = name[loc[4]:loc[5]]
		}
		tags[s.GetTagName()] = value
		for i := loc[2]; i < loc[3]; i++ {
			remove[i] = true
		}
	}
	var b strings.Builder
	for i := range name {
		if !remove[i] {
			b.WriteByte(name[i])
		}
	}
	return b.String(), tags, nil
}

// statsTagCases are metric names as the filter defines them (plugin/metrics.go; Envoy keeps Wasm
// metrics under "wasmcustom." internally) and what Prometheus must show.
var statsTagCases = []struct {
	stat     string
	wantName string
	wantTags map[string]string
}{
	{"wasmcustom.aidialect_requests_total.client_dialect.openai.provider.azure-east.status_class.2xx",
		"wasmcustom.aidialect_requests_total",
		map[string]string{"client_dialect": "openai", "provider": "azure-east", "status_class": "2xx"}},
	{"wasmcustom.aidialect_requests_total.client_dialect.azure-ai.provider.none.status_class.4xx",
		"wasmcustom.aidialect_requests_total",
		map[string]string{"client_dialect": "azure-ai", "provider": "none", "status_class": "4xx"}},
	{"wasmcustom.aidialect_prompt_tokens_total.provider.openai.model.gpt-4o",
		"wasmcustom.aidialect_prompt_tokens_total",
		map[string]string{"provider": "openai", "model": "gpt-4o"}},
	{"wasmcustom.aidialect_completion_tokens_total.provider.azure-openai.model.gpt-35-any",
		"wasmcustom.aidialect_completion_tokens_total",
		map[string]string{"provider": "azure-openai", "model": "gpt-35-any"}},
	{"wasmcustom.aidialect_filter_errors_total.code.model_not_found",
		"wasmcustom.aidialect_filter_errors_total",
		map[string]string{"code": "model_not_found"}},
	// A value equal to a label name must not be read as that label.
	{"wasmcustom.aidialect_requests_total.client_dialect.openai.provider.model.status_class.5xx",
		"wasmcustom.aidialect_requests_total",
		map[string]string{"client_dialect": "openai", "provider": "model", "status_class": "5xx"}},
	{"wasmcustom.aidialect_prompt_tokens_total.provider.code.model.code",
		"wasmcustom.aidialect_prompt_tokens_total",
		map[string]string{"provider": "code", "model": "code"}},
	{"wasmcustom.aidialect_failovers_total.from.openai.to.azure-ai.reason.rate_limited",
		"wasmcustom.aidialect_failovers_total",
		map[string]string{"from": "openai", "to": "azure-ai", "reason": "rate_limited"}},
	{"wasmcustom.aidialect_circuit_changes_total.provider.llama.change.opened",
		"wasmcustom.aidialect_circuit_changes_total",
		map[string]string{"provider": "llama", "change": "opened"}},
	{"wasmcustom.aidialect_budget_tokens_total.consumer.team-a",
		"wasmcustom.aidialect_budget_tokens_total",
		map[string]string{"consumer": "team-a"}},
	{"wasmcustom.aidialect_budget_checks_total.result.over_limit",
		"wasmcustom.aidialect_budget_checks_total",
		map[string]string{"result": "over_limit"}},
	{"wasmcustom.gen_ai_client_token_usage.gen_ai_operation_name.chat.gen_ai_request_model.gpt-4_1.gen_ai_token_type.input.gen_ai_provider_name.azure.ai.openai",
		"wasmcustom.gen_ai_client_token_usage",
		map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4_1", "gen_ai.token.type": "input",
			"gen_ai.provider.name": "azure.ai.openai"}},
	{"wasmcustom.gen_ai_client_operation_duration_ms.gen_ai_operation_name.embeddings.gen_ai_request_model.embed-v3.gen_ai_provider_name.azure.ai.inference",
		"wasmcustom.gen_ai_client_operation_duration_ms",
		map[string]string{"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "embed-v3", "gen_ai.provider.name": "azure.ai.inference"}},
	// A model entry named like a provider value is not the provider.
	{"wasmcustom.gen_ai_client_time_to_first_chunk_ms.gen_ai_operation_name.chat.gen_ai_request_model.openai.gen_ai_provider_name.eternalai",
		"wasmcustom.gen_ai_client_time_to_first_chunk_ms",
		map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "openai", "gen_ai.provider.name": "eternalai"}},
	// Other stats are left alone.
	{"cluster.openai.upstream_rq_total", "cluster.openai.upstream_rq_total", map[string]string{}},
	{"wasmcustom.other_plugin_total.provider.x", "wasmcustom.other_plugin_total.provider.x", map[string]string{}},
}

func checkStatsTags(specs []*metricsv3.TagSpecifier) error {
	var names []string
	for _, s := range specs {
		names = append(names, s.GetTagName())
	}
	if sorted := sortedCopy(names); !reflect.DeepEqual(sorted, wantTagNames) {
		return fmt.Errorf("stats_tags names %v, want %v", sorted, wantTagNames)
	}
	var errs []error
	for _, c := range statsTagCases {
		name, tags, err := extractTags(specs, c.stat)
		if err != nil {
			return err
		}
		if name != c.wantName || !reflect.DeepEqual(tags, c.wantTags) {
			errs = append(errs, fmt.Errorf("stats_tags on %s: got %s %v, want %s %v", c.stat, name, tags, c.wantName, c.wantTags))
		}
	}
	return errors.Join(errs...)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// mustReplace replaces old by new exactly once, so a broken-config case can never silently test the
// unbroken file.
func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("mutation: %q occurs %d times, want 1", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

// --- tests ---

// wantRejected asserts that a broken copy of file was refused, for the reason the case names.
func wantRejected(t *testing.T, err error, file, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("broken %s was accepted", file)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("rejected for another reason:\n got: %v\nwant: ...%s...", err, want)
	}
	t.Logf("rejected as expected: %v", err)
}

// readYAMLFiles reads every dir/*.yaml, keyed by path.
func readYAMLFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(dir + "/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s/*.yaml: %v", dir, err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		files[p] = readFile(t, p)
	}
	return files
}

// loadEnvoyFile is shared by the other files' tests: they compare against envoy.yaml.
func loadEnvoyFile(t *testing.T) *envoyConfig {
	t.Helper()
	ec, err := loadEnvoy(readFile(t, "envoy.yaml"))
	if err != nil {
		t.Fatalf("envoy.yaml: %v", err)
	}
	return ec
}

// TestEnvoyYAML: envoy.yaml parses strictly against the Envoy 1.35 API, passes ValidateAll, uses no
// deprecated field, and its routes, clusters, wasm filter, buffer limits, stats tags and plugin
// configuration agree with each other and with the filter's configuration rules.
func TestEnvoyYAML(t *testing.T) {
	ec := loadEnvoyFile(t)
	t.Logf("envoy.yaml: %d providers, %d clusters, %d stats tags", len(ec.plugin.Providers),
		len(ec.bootstrap.GetStaticResources().GetClusters()), len(ec.bootstrap.GetStatsConfig().GetStatsTags()))
}

// TestComposeEnvoyYAML: the Envoy that `make e2e-envoy` runs (e2e/compose/envoy.yaml: mock providers over
// plain HTTP, demo keys inline) parses strictly against the same API, passes ValidateAll and uses no
// deprecated field. The production cross-checks (TLS, api_key_env) do not apply to it.
func TestComposeEnvoyYAML(t *testing.T) {
	var b bootstrapv3.Bootstrap
	if err := yamlToProto(readFile(t, "../e2e/compose/envoy.yaml"), &b); err != nil {
		t.Fatal(err)
	}
	if err := validateAll(&b); err != nil {
		t.Fatal(err)
	}
	if dep := deprecatedUses(b.ProtoReflect(), "bootstrap"); len(dep) > 0 {
		t.Fatalf("deprecated fields or values in use: %s", strings.Join(dep, ", "))
	}
	// Its catch-all answers like the production one (body envelope, content-type, x-aidialect-error).
	var hcm hcmv3.HttpConnectionManager
	if err := b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	routes := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
	if err := checkCatchAll(routes[len(routes)-1]); err != nil {
		t.Fatalf("e2e/compose/envoy.yaml: %v", err)
	}
	// And with the same bytes, so make e2e-envoy, the local gateway and production answer alike.
	compose := routes[len(routes)-1].GetDirectResponse().GetBody().GetInlineString()
	production := catchAllRe.FindSubmatch(readFile(t, "envoy.yaml"))
	if production == nil || compose != string(production[1]) {
		t.Errorf("e2e/compose/envoy.yaml's catch-all body differs from envoy.yaml's:\n%s\n%s", compose, production)
	}
}

// catchAllRe finds the catch-all route's body in envoy.yaml.
var catchAllRe = regexp.MustCompile(`inline_string: '(\{[^']*route_not_found[^']*\})'`)

// TestBrokenEnvoyYAMLIsRejected: the same pipeline fails on broken copies of envoy.yaml. Each layer is
// exercised: YAML, strict protojson (top level and inside an Any), Any type resolution, ValidateAll,
// deprecations, the cross-checks, the plugin configuration and the stats tags.
func TestBrokenEnvoyYAMLIsRejected(t *testing.T) {
	good := string(readFile(t, "envoy.yaml"))
	cases := []struct {
		name, old, new, want string
	}{
		{"misspelled field", "per_connection_buffer_limit_bytes: 16777216\n    filter_chains:",
			"per_connection_buffer_limit_byte: 16777216\n    filter_chains:", `unknown field "per_connection_buffer_limit_byte"`},
		{"misspelled field inside the wasm Any", "allow_on_headers_stop_iteration: true",
			"allow_on_header_stop_iteration: true", `unknown field "allow_on_header_stop_iteration"`},
		{"unknown typed_config type", "envoy.extensions.filters.http.router.v3.Router",
			"envoy.extensions.filters.http.router.v3.Routr", "unable to resolve"},
		{"duplicate YAML key", "stat_prefix: aidialect\n", "stat_prefix: aidialect\n          stat_prefix: again\n", `key "stat_prefix" already set`},
		{"cluster with no name", "  - name: eternalai\n    type: LOGICAL_DNS", "  - name: \"\"\n    type: LOGICAL_DNS",
			"Cluster.Name: value length must be at least 1"},
		{"port out of range", "port_value: 10000", "port_value: 100000", "PortValue: value must be less than or equal to 65535"},
		{"rule broken inside an Any (HCM)", "stat_prefix: aidialect\n", "stat_prefix: \"\"\n", "StatPrefix: value length must be at least 1"},
		{"rule broken below an Any (route config inside the HCM)", `domains: ["*"]`, `domains: []`, "Domains: value must contain at least 1 item"},
		{"rule broken in the TLS context Any", "san_type: DNS\n              matcher: { exact: api.openai.com }",
			"san_type: DNS\n              matcher: {}", "MatchPattern: value is required"},
		{"deprecated field", "  - name: openai\n    type: LOGICAL_DNS\n    dns_lookup_family: V4_PREFERRED\n",
			"  - name: openai\n    type: LOGICAL_DNS\n    dns_lookup_family: V4_PREFERRED\n    dns_refresh_rate: 5s\n",
			"deprecated fields or values in use: bootstrap.static_resources.clusters[0].dns_refresh_rate"},
		{"route to a missing cluster", "route: { cluster: azure-ai, timeout: 0s,", "route: { cluster: azure-aj, timeout: 0s,",
			`points to missing cluster "azure-aj"`},
		{"stream-cutting route timeout", "route: { cluster: openai, timeout: 0s,", "route: { cluster: openai, timeout: 15s,",
			"timeout must be 0s"},
		{"no per-try idle timeout", "cluster: eternalai, timeout: 0s, retry_policy: { retry_on: \"connect-failure,refused-stream\", num_retries: 1, per_try_idle_timeout: 300s }",
			"cluster: eternalai, timeout: 0s, retry_policy: { retry_on: \"connect-failure,refused-stream\", num_retries: 1 }",
			"per_try_idle_timeout must be set"},
		{"retrying 5xx on the same provider", "cluster: openai, timeout: 0s, retry_policy: { retry_on: \"connect-failure,refused-stream\"",
			"cluster: openai, timeout: 0s, retry_policy: { retry_on: \"connect-failure,5xx\"", `retry_on "5xx" retries on the same provider`},
		{"flag off", "allow_on_headers_stop_iteration: true", "allow_on_headers_stop_iteration: false",
			"allow_on_headers_stop_iteration must be true"},
		{"wrong SNI", "sni: api.eternalai.org", "sni: eternalai.org", `sni "eternalai.org"`},
		{"buffer limit not raised", "per_connection_buffer_limit_bytes: 16777216\n    filter_chains:",
			"per_connection_buffer_limit_bytes: 1048576\n    filter_chains:", "per_connection_buffer_limit_bytes is 1048576"},
		{"unbounded circuit breakers", "        max_requests: 8192\n    upstream_connection_options:\n      # Long",
			"        max_requests: 4294967295\n    upstream_connection_options:\n      # Long",
			"cluster openai: circuit_breakers: max_requests is 4294967295, unbounded in effect"},
		{"default circuit breakers", "    circuit_breakers:\n      thresholds:\n      - priority: DEFAULT\n        max_connections: 8192\n        max_pending_requests: 8192\n        max_requests: 8192\n    upstream_connection_options:\n      # Long",
			"    upstream_connection_options:\n      # Long",
			"cluster openai: circuit_breakers: max_connections is not set"},
		{"fewer connections than requests on HTTP/1.1", "        max_connections: 8192\n        max_pending_requests: 8192\n        max_requests: 8192\n    upstream_connection_options:\n      tcp_keepalive: { keepalive_time: 60, keepalive_interval: 15, keepalive_probes: 4 }\n    typed_extension_protocol_options:\n      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:\n        \"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\n        explicit_http_config:\n          http_protocol_options: {}\n    load_assignment:\n      cluster_name: azure-openai",
			"        max_connections: 4096\n        max_pending_requests: 8192\n        max_requests: 8192\n    upstream_connection_options:\n      tcp_keepalive: { keepalive_time: 60, keepalive_interval: 15, keepalive_probes: 4 }\n    typed_extension_protocol_options:\n      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:\n        \"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\n        explicit_http_config:\n          http_protocol_options: {}\n    load_assignment:\n      cluster_name: azure-openai",
			"cluster azure-openai: circuit_breakers: max_connections (4096) below max_requests (8192)"},
		{"unknown plugin configuration key", `"routing_header": "x-aidialect-provider",`,
			`"routing_headers": "x-aidialect-provider",`, `plugin configuration: unknown field "routing_headers"`},
		{"unknown dialect", `"dialect": "eternalai"`, `"dialect": "eternal-ai"`, `unknown dialect "eternal-ai"`},
		{"secret inline", `"api_key_env": "ETERNALAI_KEY"`, `"api_key": "sk-live-123"`, "api_key puts a secret"},
		{"env key not exposed to the VM", "host_env_keys: [OPENAI_API_KEY, AZURE_OPENAI_KEY, AZURE_AI_KEY, ETERNALAI_KEY]",
			"host_env_keys: [OPENAI_API_KEY, AZURE_OPENAI_KEY, AZURE_AI_KEY]", "host_env_keys"},
		{"stats tag regex without the label key", `(\.provider\.([^.]+))'`, `(\.([^.]+))'`, "stats_tags on"},
		{"stats tag regex not RE2", `(\.model\.([^.]+))'`, `(\.model\.(?=[^.]+))'`, "regex is not RE2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			broken := mustReplace(t, good, c.old, c.new)
			_, err := loadEnvoy([]byte(broken))
			wantRejected(t, err, "envoy.yaml", c.want)
		})
	}
}

// TestPluginConfigKeys: the key list above is complete (a sample with every key decodes),
// and an unknown key at any depth is an error.
func TestPluginConfigKeys(t *testing.T) {
	full := `{"providers":[{"name":"p","dialect":"azure-openai","host":"r.openai.azure.com","base_path":"/openai",
	  "api_key_env":"K","auth":"bearer","api_version":"2024-10-21",
	  "models":[{"name":"m","model":"x","deployment":"d"}]},
	 {"name":"e","dialect":"eternalai","host":"api.eternalai.org","api_key_env":"E","chain_id":"45762",
	  "models":[{"name":"i","chain_id":"45762"}]},
	 {"name":"a","dialect":"azure-ai","host":"x.models.ai.azure.com","api_key_env":"A","extra_parameters":"drop",
	  "models":[{"name":"*"}]}],
	 "default_provider":"p","consumers":[{"name":"c","key_sha256":"` + strings.Repeat("ab", 32) + `","models":["gpt-*"]}],
	 "routing_header":"x-aidialect-provider","path_prefix":"/llm","max_request_bytes":1,
	 "onchain_data":"keep","unknown_paths":"reject","max_event_bytes":65536,"usage":"force"}`
	if _, err := parsePluginConfig([]byte(full)); err != nil {
		t.Fatalf("a configuration using every key was rejected: %v", err)
	}
	for _, bad := range []string{
		`{"providers":[],"extra":1}`,
		`{"providers":[{"name":"p","dialect":"openai","host":"h.example","api_key_env":"K","models":[{"name":"*"}],"timeout":5}]}`,
		`{"providers":[{"name":"p","dialect":"openai","host":"h.example","api_key_env":"K","models":[{"name":"*","weight":1}]}]}`,
		`{"providers":[{"name":"p","dialect":"openai","host":"h.example","api_key_env":"K","models":[{"name":"*"}]}],"consumers":[{"name":"c","key":"x"}]}`,
		// Same key, other case: not the key the filter defines.
		`{"providers":[{"name":"p","dialect":"openai","host":"h.example","api_key_env":"K","models":[{"name":"*"}]}],"Routing_Header":"x"}`,
	} {
		if _, err := parsePluginConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("unknown key accepted or rejected for another reason (%v): %s", err, bad)
		}
	}
}

// TestDockerfile: the image layout Istio's and Envoy Gateway's OCI fetchers expect, built from the
// repository root.
func TestDockerfile(t *testing.T) {
	var instr []string
	for _, line := range strings.Split(string(readFile(t, "Dockerfile")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			instr = append(instr, line)
		}
	}
	want := []string{"FROM scratch", "COPY dist/aidialect.wasm ./plugin.wasm"}
	if !reflect.DeepEqual(instr, want) {
		t.Fatalf("Dockerfile instructions %q, want %q", instr, want)
	}
	// The documented build makes a plain linux/amd64 image manifest: Istio's and Envoy Gateway's fetchers
	// resolve only linux/amd64 from an index, and attestations always make one.
	for _, flag := range []string{"--platform linux/amd64", "--provenance=false", "--sbom=false"} {
		if !strings.Contains(string(readFile(t, "Dockerfile")), flag) {
			t.Errorf("Dockerfile: the documented build command must pass %s", flag)
		}
	}
	ignore := string(readFile(t, "Dockerfile.dockerignore"))
	if !strings.Contains(ignore, "!dist/aidialect.wasm") {
		t.Fatalf("Dockerfile.dockerignore must keep dist/aidialect.wasm in the build context")
	}
}
