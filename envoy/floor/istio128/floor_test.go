// Package istio128_test checks ../../istio/*.yaml with the protos of Istio 1.28.0, the oldest Istio this
// deployment supports:
//
//	cd envoy/floor/istio128 && go test ./...
//
// istiod turns each EnvoyFilter patch value into an Envoy message with the go-control-plane it is built
// with, ALLOWING unknown fields (pilot/pkg/model/envoyfilter.go calls pkg/config/xds
// BuildXDSObjectFromStruct with strict=false): a field that revision lacks is dropped without an error,
// which is how Istio 1.27 loses allow_on_headers_stop_iteration. Here every patch value is parsed
// STRICTLY with exactly the revision Istio 1.28.0 pins, so such a field fails a test instead; the
// complete values also pass that revision's ValidateAll. The Istio resources themselves are parsed
// strictly with istio.io/api v1.28.0, so a field only a newer Istio knows fails too (../../istio_test.go
// uses a newer istio.io/api and does the cross-checks; this module checks only what the floor adds).
//
// Cost on a 2-core machine: see ../../README.md ("The validation tests") and the Makefile.
package istio128_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"

	// Types the patches reference only through Any (typed_config): registering them lets protojson
	// resolve them, as istiod's own imports do.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
)

const istioDir = "../../istio"

// Istio's kinds and the istio.io/api message of their spec.
var specTypes = map[string]func() proto.Message{
	"WasmPlugin":      func() proto.Message { return &extensionsv1alpha1.WasmPlugin{} },
	"EnvoyFilter":     func() proto.Message { return &networkingv1alpha3.EnvoyFilter{} },
	"Gateway":         func() proto.Message { return &networkingv1alpha3.Gateway{} },
	"ServiceEntry":    func() proto.Message { return &networkingv1alpha3.ServiceEntry{} },
	"DestinationRule": func() proto.Message { return &networkingv1alpha3.DestinationRule{} },
	"VirtualService":  func() proto.Message { return &networkingv1alpha3.VirtualService{} },
}

// patchTarget is the Envoy message istiod builds from a patch value for each applyTo (the same table as
// istio pkg/config/xds/xds.go).
func patchTarget(applyTo networkingv1alpha3.EnvoyFilter_ApplyTo) (proto.Message, error) {
	switch applyTo {
	case networkingv1alpha3.EnvoyFilter_CLUSTER:
		return &clusterv3.Cluster{}, nil
	case networkingv1alpha3.EnvoyFilter_LISTENER:
		return &listenerv3.Listener{}, nil
	case networkingv1alpha3.EnvoyFilter_ROUTE_CONFIGURATION:
		return &routev3.RouteConfiguration{}, nil
	case networkingv1alpha3.EnvoyFilter_FILTER_CHAIN:
		return &listenerv3.FilterChain{}, nil
	case networkingv1alpha3.EnvoyFilter_HTTP_FILTER:
		return &hcmv3.HttpFilter{}, nil
	case networkingv1alpha3.EnvoyFilter_NETWORK_FILTER:
		return &listenerv3.Filter{}, nil
	case networkingv1alpha3.EnvoyFilter_VIRTUAL_HOST:
		return &routev3.VirtualHost{}, nil
	case networkingv1alpha3.EnvoyFilter_HTTP_ROUTE:
		return &routev3.Route{}, nil
	case networkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG:
		return &corev3.TypedExtensionConfig{}, nil
	case networkingv1alpha3.EnvoyFilter_BOOTSTRAP:
		return &bootstrapv3.Bootstrap{}, nil
	case networkingv1alpha3.EnvoyFilter_LISTENER_FILTER:
		return &listenerv3.ListenerFilter{}, nil
	}
	return nil, fmt.Errorf("applyTo %v has no Envoy message", applyTo)
}

// envelope is the part of a Kubernetes object this module needs; ../../istio_test.go checks the
// envelope strictly.
type envelope struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   struct{ Name string } `json:"metadata"`
	Spec       json.RawMessage       `json:"spec"`
	Data       map[string]string     `json:"data"`
}

func splitYAML(data []byte) []string {
	var docs []string
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(data), -1) {
		for _, line := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, doc)
				break
			}
		}
	}
	return docs
}

// validateAll runs ValidateAll on m and on every message packed in an Any below it (the generated
// ValidateAll stops at Any fields).
func validateAll(m proto.Message) error {
	var errs []error
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, err)
		}
	}
	var walk func(protoreflect.Message)
	walk = func(pm protoreflect.Message) {
		pm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			visit := func(v protoreflect.Value) {
				sub := v.Message()
				if a, ok := sub.Interface().(*anypb.Any); ok {
					if inner, err := a.UnmarshalNew(); err == nil {
						if err := validateAll(inner); err != nil {
							errs = append(errs, err)
						}
					}
					return
				}
				walk(sub)
			}
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					visit(v.List().Get(i))
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { visit(mv); return true })
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				visit(v)
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	return errors.Join(errs...)
}

// checkPatch parses one EnvoyFilter patch value as istiod 1.28 does and strictly, and validates the
// values that are complete resources. It returns what istiod itself would build (unknown fields
// dropped), for the checks on its content.
func checkPatch(p *networkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) (proto.Message, error) {
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(p.GetPatch().GetValue())
	if err != nil {
		return nil, err
	}
	strict, err := patchTarget(p.GetApplyTo())
	if err != nil {
		return nil, err
	}
	if err := protojson.Unmarshal(js, strict); err != nil {
		return nil, fmt.Errorf("%v value, strictly with Istio 1.28.0's go-control-plane (istiod would drop what it does not know): %w", p.GetApplyTo(), err)
	}
	asIstiod, _ := patchTarget(p.GetApplyTo())
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, asIstiod); err != nil {
		return nil, fmt.Errorf("%v value as istiod parses it: %w", p.GetApplyTo(), err)
	}
	switch v := strict.(type) {
	case *corev3.TypedExtensionConfig:
		// Envoy receives the module as a local file (istio-agent downloads it and rewrites the code
		// block), so validate that form.
		var w wasmfilterv3.Wasm
		if err := v.GetTypedConfig().UnmarshalTo(&w); err != nil {
			return nil, fmt.Errorf("EXTENSION_CONFIG: %w", err)
		}
		w.GetConfig().GetVmConfig().Code = &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Local{
			Local: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "/var/lib/istio/data/module.wasm"}}}}
		local := proto.Clone(v).(*corev3.TypedExtensionConfig)
		if err := local.GetTypedConfig().MarshalFrom(&w); err != nil {
			return nil, err
		}
		if err := validateAll(local); err != nil {
			return nil, fmt.Errorf("EXTENSION_CONFIG value: %w", err)
		}
	case *hcmv3.HttpFilter:
		if err := validateAll(v); err != nil {
			return nil, fmt.Errorf("HTTP_FILTER value: %w", err)
		}
	}
	return asIstiod, nil
}

// checkIstioFloor parses every document of files (path -> content) with the Istio 1.28 protos.
func checkIstioFloor(files map[string][]byte) error {
	var errs []error
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	flagSurvives := false
	for _, path := range paths {
		for i, doc := range splitYAML(files[path]) {
			where := fmt.Sprintf("%s document %d", filepath.Base(path), i+1)
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			var env envelope
			if err := json.Unmarshal(js, &env); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if env.Kind == "ConfigMap" {
				var b bootstrapv3.Bootstrap
				if err := protojson.Unmarshal([]byte(env.Data["custom_bootstrap.json"]), &b); err != nil {
					errs = append(errs, fmt.Errorf("%s: ConfigMap %s custom_bootstrap.json: %w", where, env.Metadata.Name, err))
				} else if err := validateAll(&b); err != nil {
					errs = append(errs, fmt.Errorf("%s: ConfigMap %s custom_bootstrap.json: %w", where, env.Metadata.Name, err))
				}
				continue
			}
			newSpec, ok := specTypes[env.Kind]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: unexpected kind %q", where, env.Kind))
				continue
			}
			spec := newSpec()
			if err := protojson.Unmarshal(env.Spec, spec); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %s spec, strictly with istio.io/api v1.28.0: %w", where, env.Kind, env.Metadata.Name, err))
				continue
			}
			ef, ok := spec.(*networkingv1alpha3.EnvoyFilter)
			if !ok {
				continue
			}
			for j, p := range ef.GetConfigPatches() {
				built, err := checkPatch(p)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: EnvoyFilter %s patch %d: %w", where, env.Metadata.Name, j, err))
					continue
				}
				if tec, ok := built.(*corev3.TypedExtensionConfig); ok {
					var w wasmfilterv3.Wasm
					if tec.GetTypedConfig().UnmarshalTo(&w) == nil && w.GetConfig().GetAllowOnHeadersStopIteration().GetValue() {
						flagSurvives = true
					}
				}
			}
		}
	}
	if !flagSurvives {
		errs = append(errs, errors.New("no EXTENSION_CONFIG patch keeps allow_on_headers_stop_iteration: true through istiod 1.28's parse: body-routed requests would hang"))
	}
	return errors.Join(errs...)
}

func readIstioFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(istioDir + "/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s/*.yaml: %v", istioDir, err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = data
	}
	return files
}

// TestIstio128: the Istio files as Istio 1.28.0 reads them.
func TestIstio128(t *testing.T) {
	if err := checkIstioFloor(readIstioFiles(t)); err != nil {
		t.Fatal(err)
	}
}

// TestIstio128Bites: broken copies fail for the reason each names. The first two are valid for a newer
// Istio: a newer istiod would apply them, istiod 1.28 would silently drop the field.
func TestIstio128Bites(t *testing.T) {
	cases := []struct{ name, file, old, new, want string }{
		{"Envoy field newer than Istio 1.28's go-control-plane", "envoyfilter.yaml",
			"        per_connection_buffer_limit_bytes: 16777216\n",
			"        per_connection_buffer_limit_bytes: 16777216\n        tcp_keepalive: { keepalive_time: 60 }\n",
			`LISTENER value, strictly with Istio 1.28.0's go-control-plane (istiod would drop what it does not know) ... unknown field "tcp_keepalive"`},
		{"Istio field newer than 1.28", "serviceentries.yaml",
			"          http2MaxRequests: 8192\n---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: azure-openai",
			"          http2MaxRequests: 8192\n          http2KeepAlive: { interval: 60s }\n---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: azure-openai",
			`DestinationRule openai spec, strictly with istio.io/api v1.28.0 ... unknown field "http2KeepAlive"`},
		{"misspelled flag inside the Any", "envoyfilter.yaml", "            allow_on_headers_stop_iteration: true",
			"            allow_on_header_stop_iteration: true", `unknown field "allow_on_header_stop_iteration"`},
		{"flag off", "envoyfilter.yaml", "            allow_on_headers_stop_iteration: true",
			"            allow_on_headers_stop_iteration: false", "no EXTENSION_CONFIG patch keeps allow_on_headers_stop_iteration"},
		{"invalid complete value", "envoyfilter.yaml", "          type_urls:\n          - type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
			"          type_urls: []", "HTTP_FILTER value: invalid HttpFilter.ConfigDiscovery"},
		{"bootstrap override field typo", "bootstrap-override.yaml", `{"tag_name": "model",`, `{"tag_nme": "model",`,
			`ConfigMap aidialect-bootstrap custom_bootstrap.json ... unknown field "tag_nme"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := readIstioFiles(t)
			path := filepath.Join(istioDir, c.file)
			if n := strings.Count(string(files[path]), c.old); n != 1 {
				t.Fatalf("mutation: %q occurs %d times in %s, want 1", c.old, n, c.file)
			}
			files[path] = []byte(strings.Replace(string(files[path]), c.old, c.new, 1))
			err := checkIstioFloor(files)
			if err == nil {
				t.Fatalf("broken %s was accepted", c.file)
			}
			// want is one or more parts joined by " ... " (protojson's messages vary their spacing).
			for _, part := range strings.Split(c.want, " ... ") {
				if !strings.Contains(err.Error(), part) {
					t.Fatalf("rejected for another reason:\n got: %v\nwant: ...%s...", err, c.want)
				}
			}
			t.Logf("rejected as expected: %v", err)
		})
	}
}
