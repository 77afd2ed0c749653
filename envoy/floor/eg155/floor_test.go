// Package eg155_test checks ../../gateway/*.yaml with the field set of Envoy Gateway v1.5.5, the oldest
// Envoy Gateway this deployment supports (see go.mod for the exact versions and why they stand for v1.5.5):
//
//	cd envoy/floor/eg155 && go test ./...
//
// Envoy Gateway applies an EnvoyPatchPolicy to the JSON of the xDS resource it generated, then parses
// the result strictly with the go-control-plane it is built with and validates it
// (internal/xds/translator/jsonpatch.go); a patch that sets a field that revision lacks fails there, and
// the patches around it still apply. That is how v1.5.0-v1.5.4 lose allow_on_headers_stop_iteration.
// Here every patch is applied to resources shaped like the ones Envoy Gateway v1.5 generates for these
// manifests and parsed the same way, and every document is parsed strictly into Envoy Gateway's and the
// Gateway API's Go types. ../../gateway_test.go does the cross-checks; this module keeps the floor.
package eg155_test

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
	"time"

	egv1a1 "github.com/envoyproxy/gateway/api/v1alpha1"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/wasm/v3"
	"github.com/ohler55/ojg/jp"
	"github.com/ohler55/ojg/oj"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	gatewayDir      = "../../gateway"
	listenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeTypeURL    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// manifests holds the documents of gateway/*.yaml that carry Envoy configuration, or shape it.
type manifests struct {
	gateway     *gwapiv1.Gateway
	route       *gwapiv1.HTTPRoute
	proxy       *egv1a1.EnvoyProxy
	extension   *egv1a1.EnvoyExtensionPolicy
	patchPolicy *egv1a1.EnvoyPatchPolicy
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

// decodeStrict decodes a YAML document as the API server does with strict field validation.
func decodeStrict(doc string, v any) error {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// load parses every document strictly into the Envoy Gateway v1.5 / Gateway API type of its kind.
func load(files map[string][]byte) (*manifests, error) {
	m := &manifests{}
	var errs []error
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		for i, doc := range splitYAML(files[path]) {
			where := fmt.Sprintf("%s document %d", filepath.Base(path), i+1)
			var tm struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "gateway.networking.k8s.io/v1 Gateway":
				m.gateway = &gwapiv1.Gateway{}
				obj = m.gateway
			case "gateway.networking.k8s.io/v1 HTTPRoute":
				m.route = &gwapiv1.HTTPRoute{}
				obj = m.route
			case "gateway.networking.k8s.io/v1alpha3 BackendTLSPolicy":
				obj = &gwapiv1a3.BackendTLSPolicy{}
			case "gateway.envoyproxy.io/v1alpha1 EnvoyProxy":
				m.proxy = &egv1a1.EnvoyProxy{}
				obj = m.proxy
			case "gateway.envoyproxy.io/v1alpha1 EnvoyExtensionPolicy":
				m.extension = &egv1a1.EnvoyExtensionPolicy{}
				obj = m.extension
			case "gateway.envoyproxy.io/v1alpha1 EnvoyPatchPolicy":
				m.patchPolicy = &egv1a1.EnvoyPatchPolicy{}
				obj = m.patchPolicy
			case "gateway.envoyproxy.io/v1alpha1 BackendTrafficPolicy":
				obj = &egv1a1.BackendTrafficPolicy{}
			case "gateway.envoyproxy.io/v1alpha1 ClientTrafficPolicy":
				obj = &egv1a1.ClientTrafficPolicy{}
			case "gateway.envoyproxy.io/v1alpha1 Backend":
				obj = &egv1a1.Backend{}
			case "gateway.envoyproxy.io/v1alpha1 HTTPRouteFilter":
				obj = &egv1a1.HTTPRouteFilter{}
			default:
				errs = append(errs, fmt.Errorf("%s: unexpected %s %s", where, tm.APIVersion, tm.Kind))
				continue
			}
			if err := decodeStrict(doc, obj); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s), strictly with Envoy Gateway v1.5.5's API: %w", where, tm.Kind, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if m.gateway == nil || m.route == nil || m.proxy == nil || m.extension == nil || m.patchPolicy == nil ||
		len(m.extension.Spec.Wasm) != 1 || m.extension.Spec.Wasm[0].Config == nil {
		return nil, errors.New("want a Gateway, an HTTPRoute, an EnvoyProxy, an EnvoyExtensionPolicy with one wasm entry and an EnvoyPatchPolicy")
	}
	return m, nil
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
				if a, ok := v.Message().Interface().(*anypb.Any); ok {
					if inner, err := a.UnmarshalNew(); err == nil {
						if err := validateAll(inner); err != nil {
							errs = append(errs, err)
						}
					}
					return
				}
				walk(v.Message())
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

// generated returns the listener and route configuration Envoy Gateway v1.5 builds for these manifests,
// as far as the patches can see them (internal/xds/translator: listener.go, wasm.go, route.go): the
// Wasm filter disabled on the listener and named after the policy, the code fetched from Envoy
// Gateway's Wasm cache; one route per HTTPRoute rule, forwarding ones with timeout and idle_timeout 0s
// (BackendTrafficPolicy requestTimeout 0s), the catch-all as a direct response.
func generated(m *manifests) (*listenerv3.Listener, *routev3.RouteConfiguration, error) {
	gw, eep, w := m.gateway, m.extension, m.extension.Spec.Wasm[0]
	name := fmt.Sprintf("%s/%s/%s", gw.Namespace, gw.Name, gw.Spec.Listeners[0].Name)
	irName := fmt.Sprintf("envoyextensionpolicy/%s/%s/wasm/0", eep.Namespace, eep.Name)
	cfg, err := anypb.New(wrapperspb.String(string(w.Config.Raw)))
	if err != nil {
		return nil, nil, err
	}
	var hostKeys []string
	if w.Env != nil {
		hostKeys = w.Env.HostKeys
	}
	pc := &wasmv3.PluginConfig{
		Name:          irName,
		Configuration: cfg,
		Vm: &wasmv3.PluginConfig_VmConfig{VmConfig: &wasmv3.VmConfig{
			VmId:    irName,
			Runtime: "envoy.wasm.runtime.v8",
			Code: &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Remote{Remote: &corev3.RemoteDataSource{
				HttpUri: &corev3.HttpUri{
					Uri:              "https://envoy-gateway.envoy-gateway-system.svc.cluster.local:18002/module.wasm",
					HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "wasm_cluster"},
					Timeout:          durationpb.New(10 * time.Second),
				},
				Sha256: strings.Repeat("0", 64),
			}}},
			EnvironmentVariables: &wasmv3.EnvironmentVariables{HostEnvKeys: hostKeys},
		}},
	}
	wasmAny, err := anypb.New(&wasmfilterv3.Wasm{Config: pc})
	if err != nil {
		return nil, nil, err
	}
	routerAny, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, nil, err
	}
	hcmAny, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "http-80",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: name,
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.wasm/" + irName, Disabled: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: wasmAny}},
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: routerAny}},
		},
	})
	if err != nil {
		return nil, nil, err
	}
	l := &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 10080}}}},
		DefaultFilterChain: &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcmAny}}}},
	}
	vh := &routev3.VirtualHost{Name: name + "/*", Domains: []string{"*"}}
	r := m.route
	for i, rule := range r.Spec.Rules {
		rt := &routev3.Route{
			Name:  fmt.Sprintf("httproute/%s/%s/rule/%d/match/0/*", r.Namespace, r.Name, i),
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		}
		if len(rule.BackendRefs) == 0 {
			rt.Action = &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 404}}
		} else {
			rt.Action = &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: fmt.Sprintf("httproute/%s/%s/rule/%d", r.Namespace, r.Name, i)},
				Timeout:          durationpb.New(0),
				IdleTimeout:      durationpb.New(0),
			}}
		}
		vh.Routes = append(vh.Routes, rt)
	}
	return l, &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{vh}}, nil
}

// checkFloor: the EnvoyProxy bootstrap and the EnvoyPatchPolicy, as Envoy Gateway v1.5.5 reads them.
func checkFloor(files map[string][]byte) error {
	m, err := load(files)
	if err != nil {
		return err
	}
	var errs []error
	if bs := m.proxy.Spec.Bootstrap; bs == nil || bs.Value == nil {
		errs = append(errs, errors.New("EnvoyProxy: bootstrap value missing"))
	} else {
		var b bootstrapv3.Bootstrap
		if js, err := yaml.YAMLToJSONStrict([]byte(*bs.Value)); err != nil {
			errs = append(errs, fmt.Errorf("EnvoyProxy bootstrap: %w", err))
		} else if err := protojson.Unmarshal(js, &b); err != nil {
			errs = append(errs, fmt.Errorf("EnvoyProxy bootstrap, strictly with v1.5.5's go-control-plane: %w", err))
		} else if err := validateAll(&b); err != nil {
			errs = append(errs, fmt.Errorf("EnvoyProxy bootstrap: %w", err))
		}
	}

	l, rc, err := generated(m)
	if err != nil {
		return err
	}
	docs := map[string]any{}
	names := map[string]string{listenerTypeURL: l.GetName(), routeTypeURL: rc.GetName()}
	for typeURL, msg := range map[string]proto.Message{listenerTypeURL: l, routeTypeURL: rc} {
		js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
		if err != nil {
			return err
		}
		if docs[typeURL], err = oj.Parse(js); err != nil {
			return err
		}
	}
	for i, p := range m.patchPolicy.Spec.JSONPatches {
		op := p.Operation
		doc := docs[string(p.Type)]
		if doc == nil || p.Name != names[string(p.Type)] {
			errs = append(errs, fmt.Errorf("EnvoyPatchPolicy patch %d: no generated %s named %q", i, p.Type, p.Name))
			continue
		}
		if op.Op != "add" || op.JSONPath == nil || op.Path == nil || op.Value == nil || strings.Count(*op.Path, "/") != 1 {
			errs = append(errs, fmt.Errorf("EnvoyPatchPolicy patch %d: this check handles `add` with jsonPath and a one-segment path only", i))
			continue
		}
		x, err := jp.ParseString(*op.JSONPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("EnvoyPatchPolicy patch %d: %w", i, err))
			continue
		}
		hits := x.Get(doc)
		if len(hits) == 0 {
			errs = append(errs, fmt.Errorf("EnvoyPatchPolicy patch %d: jsonPath %s selects nothing", i, *op.JSONPath))
		}
		for _, h := range hits {
			obj, ok := h.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Errorf("EnvoyPatchPolicy patch %d: jsonPath must select objects", i))
				break
			}
			var v any
			if err := json.Unmarshal(op.Value.Raw, &v); err != nil {
				return err
			}
			obj[strings.TrimPrefix(*op.Path, "/")] = v
		}
	}

	var patchedL listenerv3.Listener
	var patchedRC routev3.RouteConfiguration
	for typeURL, msg := range map[string]proto.Message{listenerTypeURL: &patchedL, routeTypeURL: &patchedRC} {
		if err := protojson.Unmarshal([]byte(oj.JSON(docs[typeURL])), msg); err != nil {
			errs = append(errs, fmt.Errorf("patched %s, strictly with v1.5.5's go-control-plane (Envoy Gateway rejects the patch): %w", typeURL, err))
		} else if err := validateAll(msg); err != nil {
			errs = append(errs, fmt.Errorf("patched %s: %w", typeURL, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// What the patches are for, as Envoy receives it.
	var hcm hcmv3.HttpConnectionManager
	var w wasmfilterv3.Wasm
	if err := patchedL.GetDefaultFilterChain().GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return err
	}
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&w); err != nil {
		return err
	}
	if !w.GetConfig().GetAllowOnHeadersStopIteration().GetValue() || w.GetConfig().GetFailurePolicy() != wasmv3.FailurePolicy_FAIL_RELOAD {
		errs = append(errs, errors.New("patched listener: the wasm filter must get allow_on_headers_stop_iteration: true and FAIL_RELOAD"))
	}
	for _, r := range patchedRC.GetVirtualHosts()[0].GetRoutes() {
		if ra := r.GetRoute(); ra != nil && ra.GetIdleTimeout().AsDuration() <= 0 {
			errs = append(errs, fmt.Errorf("patched route %s: idle_timeout is 0 (off): a silent provider stream would never end", r.GetName()))
		}
	}
	return errors.Join(errs...)
}

func readGatewayFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(gatewayDir + "/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s/*.yaml: %v", gatewayDir, err)
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

// TestEnvoyGateway155: the Envoy Gateway files as Envoy Gateway v1.5.5 reads them.
func TestEnvoyGateway155(t *testing.T) {
	if err := checkFloor(readGatewayFiles(t)); err != nil {
		t.Fatal(err)
	}
}

// TestEnvoyGateway155Bites: broken copies fail for the reason each names. The first two are valid for a
// newer Envoy Gateway, which v1.5.5 would reject (the patch) or not know (the policy field).
func TestEnvoyGateway155Bites(t *testing.T) {
	cases := []struct{ name, file, old, new, want string }{
		{"route field newer than v1.5.5's go-control-plane", "envoyextensionpolicy.yaml", "      path: /idle_timeout\n",
			"      path: /flush_timeout\n", `patched type.googleapis.com/envoy.config.route.v3.RouteConfiguration, strictly with v1.5.5's go-control-plane (Envoy Gateway rejects the patch) ... unknown field "flush_timeout"`},
		{"policy field newer than v1.5.5", "backendtrafficpolicy.yaml", "      requestTimeout: 0s\n",
			"      requestTimeout: 0s\n      maxStreamDuration: 3600s\n", `unknown field "spec.timeout.http.maxStreamDuration"`},
		{"misspelled flag", "envoyextensionpolicy.yaml", "path: /allow_on_headers_stop_iteration", "path: /allow_on_header_stop_iteration",
			`unknown field "allow_on_header_stop_iteration"`},
		{"idle timeout patch removed", "envoyextensionpolicy.yaml",
			"  - type: type.googleapis.com/envoy.config.route.v3.RouteConfiguration\n    name: aidialect/aidialect/http\n    operation:\n      op: add\n      jsonPath: \"$.virtual_hosts[*].routes[*].route\"\n      path: /idle_timeout\n      value: 900s\n",
			"", "idle_timeout is 0 (off)"},
		{"bootstrap merge typo", "gateway.yaml", "        - tag_name: model", "        - tag_nme: model", `unknown field "tag_nme"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := readGatewayFiles(t)
			path := filepath.Join(gatewayDir, c.file)
			if n := strings.Count(string(files[path]), c.old); n != 1 {
				t.Fatalf("mutation: %q occurs %d times in %s, want 1", c.old, n, c.file)
			}
			files[path] = []byte(strings.Replace(string(files[path]), c.old, c.new, 1))
			err := checkFloor(files)
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
