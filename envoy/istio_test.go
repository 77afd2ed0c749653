package envoyconfig_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	namespace       = "aidialect"
	istioGatewayKey = "istio"
	istioGatewayVal = "aidialect-gateway"
)

// splitYAML splits a multi-document file on "---" lines and drops documents holding only comments.
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

// typeMeta reads apiVersion and kind only, to choose the strict decoder.
func typeMeta(doc string) (metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil { // lenient on purpose: only picks the decoder
		return tm, err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return tm, errors.New("apiVersion and kind are required")
	}
	return tm, nil
}

// istioObject is a Kubernetes object whose spec is an istio.io/api proto. The envelope is decoded with
// decodeYAMLStrict (unknown, duplicate or wrongly-cased keys fail, metadata included), the spec with
// strict protojson, which is how istiod reads it (the CRD schemas carry the same field set).
type istioObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`

	spec proto.Message
}

var istioKinds = map[string]struct {
	apiVersions []string
	newSpec     func() proto.Message
}{
	"WasmPlugin":      {[]string{"extensions.istio.io/v1alpha1"}, func() proto.Message { return &extensionsv1alpha1.WasmPlugin{} }},
	"EnvoyFilter":     {[]string{"networking.istio.io/v1alpha3"}, func() proto.Message { return &networkingv1alpha3.EnvoyFilter{} }},
	"Gateway":         {istioNetworkingVersions, func() proto.Message { return &networkingv1alpha3.Gateway{} }},
	"ServiceEntry":    {istioNetworkingVersions, func() proto.Message { return &networkingv1alpha3.ServiceEntry{} }},
	"DestinationRule": {istioNetworkingVersions, func() proto.Message { return &networkingv1alpha3.DestinationRule{} }},
	"VirtualService":  {istioNetworkingVersions, func() proto.Message { return &networkingv1alpha3.VirtualService{} }},
}

// networking.istio.io/v1 and v1beta1 are served from the same protos as v1alpha3.
var istioNetworkingVersions = []string{"networking.istio.io/v1", "networking.istio.io/v1beta1", "networking.istio.io/v1alpha3"}

type istioDocs struct {
	objects    []*istioObject
	configMaps []*corev1.ConfigMap
}

func loadIstio(files map[string][]byte) (*istioDocs, error) {
	docs := &istioDocs{}
	var errs []error
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, file := range names {
		for i, doc := range splitYAML(files[file]) {
			where := fmt.Sprintf("%s document %d", file, i+1)
			tm, err := typeMeta(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if tm.APIVersion == "v1" && tm.Kind == "ConfigMap" {
				var cm corev1.ConfigMap
				if err := decodeYAMLStrict([]byte(doc), &cm); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
					continue
				}
				docs.configMaps = append(docs.configMaps, &cm)
				continue
			}
			k, ok := istioKinds[tm.Kind]
			if !ok || !contains(k.apiVersions, tm.APIVersion) {
				errs = append(errs, fmt.Errorf("%s: unexpected %s %s", where, tm.APIVersion, tm.Kind))
				continue
			}
			var obj istioObject
			if err := decodeYAMLStrict([]byte(doc), &obj); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			obj.spec = k.newSpec()
			if err := unmarshalProto(obj.Spec, obj.spec); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %s spec: %w", where, obj.Kind, obj.Metadata.Name, err))
				continue
			}
			docs.objects = append(docs.objects, &obj)
		}
	}
	return docs, errors.Join(errs...)
}

// structToProto decodes an EnvoyFilter patch value (a google.protobuf.Struct holding Envoy config)
// strictly into an Envoy API message.
func structToProto(s *structpb.Struct, m proto.Message) error {
	js, err := protojson.Marshal(s)
	if err != nil {
		return err
	}
	return unmarshalProto(js, m)
}

// checkIstio cross-checks the Istio manifests with each other and with envoy.yaml.
func checkIstio(ec *envoyConfig, docs *istioDocs) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	gwSelector := map[string]string{istioGatewayKey: istioGatewayVal}

	byKind := map[string][]*istioObject{}
	for _, o := range docs.objects {
		if o.Metadata.Namespace != namespace {
			bad("%s %s: namespace %q, want %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, namespace)
		}
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	one := func(kind string) *istioObject {
		if n := len(byKind[kind]); n != 1 {
			bad("want exactly one %s, got %d", kind, n)
			return nil
		}
		return byKind[kind][0]
	}

	// Gateway: the dedicated gateway, every host on port 80.
	gwName := ""
	if o := one("Gateway"); o != nil {
		gw := o.spec.(*networkingv1alpha3.Gateway)
		gwName = o.Metadata.Name
		if !reflect.DeepEqual(gw.GetSelector(), gwSelector) {
			bad("Gateway selector %v, want %v", gw.GetSelector(), gwSelector)
		}
		if len(gw.GetServers()) != 1 || gw.GetServers()[0].GetPort().GetNumber() != 80 ||
			!reflect.DeepEqual(gw.GetServers()[0].GetHosts(), []string{"*"}) {
			bad(`Gateway must have one server on port 80 with hosts ["*"]`)
		}
	}

	// WasmPlugin: same module, root id, keys and configuration as envoy.yaml.
	if o := one("WasmPlugin"); o != nil {
		wp := o.spec.(*extensionsv1alpha1.WasmPlugin)
		if !reflect.DeepEqual(wp.GetSelector().GetMatchLabels(), gwSelector) {
			bad("WasmPlugin selector %v, want %v", wp.GetSelector().GetMatchLabels(), gwSelector)
		}
		if wp.GetUrl() != ociImage || wp.GetPluginName() != pluginName || wp.GetType() != extensionsv1alpha1.PluginType_HTTP {
			bad("WasmPlugin url/pluginName/type must be %s / %s / HTTP", ociImage, pluginName)
		}
		if ph := wp.GetPhase(); ph != extensionsv1alpha1.PluginPhase_UNSPECIFIED_PHASE && ph != extensionsv1alpha1.PluginPhase_AUTHN {
			bad("WasmPlugin phase %v: the filter must run before routing (UNSPECIFIED_PHASE or AUTHN)", ph)
		}
		if wp.GetFailStrategy() != extensionsv1alpha1.FailStrategy_FAIL_RELOAD {
			bad("WasmPlugin failStrategy %v, want FAIL_RELOAD (as envoy.yaml)", wp.GetFailStrategy())
		}
		var env []string
		for _, e := range wp.GetVmConfig().GetEnv() {
			if e.GetValueFrom() != extensionsv1alpha1.EnvValueSource_HOST || e.GetValue() != "" {
				bad("WasmPlugin env %s must come from HOST, never inline", e.GetName())
			}
			env = append(env, e.GetName())
		}
		if env = sortedCopy(env); !reflect.DeepEqual(env, envKeys(ec.plugin)) {
			bad("WasmPlugin env %v, want %v", env, envKeys(ec.plugin))
		}
		// What the filter receives: Istio serialises pluginConfig (a Struct) to JSON.
		raw, err := protojson.Marshal(wp.GetPluginConfig())
		if err != nil {
			bad("WasmPlugin pluginConfig: %v", err)
		} else if err := samePlugin("WasmPlugin pluginConfig", raw, ec); err != nil {
			errs = append(errs, err)
		}
	}

	// EnvoyFilter: the filter with the flag, over ECDS, plus the routing-header guard.
	if o := one("EnvoyFilter"); o != nil {
		if err := checkEnvoyFilter(o.spec.(*networkingv1alpha3.EnvoyFilter), gwSelector, ec); err != nil {
			errs = append(errs, err)
		}
	}

	// One ServiceEntry and DestinationRule per provider host.
	ses := map[string]*networkingv1alpha3.ServiceEntry{}
	for _, o := range byKind["ServiceEntry"] {
		se := o.spec.(*networkingv1alpha3.ServiceEntry)
		if len(se.GetHosts()) != 1 {
			bad("ServiceEntry %s: one host per provider", o.Metadata.Name)
			continue
		}
		ses[se.GetHosts()[0]] = se
	}
	drs := map[string]*networkingv1alpha3.DestinationRule{}
	for _, o := range byKind["DestinationRule"] {
		dr := o.spec.(*networkingv1alpha3.DestinationRule)
		drs[dr.GetHost()] = dr
	}
	for _, p := range ec.plugin.Providers {
		se := ses[p.Host]
		if se == nil {
			bad("provider %s: no ServiceEntry for %s", p.Name, p.Host)
		} else {
			ports := se.GetPorts()
			if se.GetLocation() != networkingv1alpha3.ServiceEntry_MESH_EXTERNAL || se.GetResolution() != networkingv1alpha3.ServiceEntry_DNS ||
				len(ports) != 1 || ports[0].GetNumber() != 80 || ports[0].GetProtocol() != "HTTP" || ports[0].GetTargetPort() != 443 ||
				!reflect.DeepEqual(se.GetExportTo(), []string{"."}) {
				bad("ServiceEntry %s: want MESH_EXTERNAL, DNS, one HTTP port 80 -> targetPort 443, exportTo [.]", p.Host)
			}
		}
		delete(ses, p.Host)
		dr := drs[p.Host]
		if dr == nil {
			bad("provider %s: no DestinationRule for %s", p.Name, p.Host)
			continue
		}
		delete(drs, p.Host)
		pls := dr.GetTrafficPolicy().GetPortLevelSettings()
		if len(pls) != 1 || pls[0].GetPort().GetNumber() != 80 {
			bad("DestinationRule %s: want TLS settings for port 80", p.Host)
			continue
		}
		tls := pls[0].GetTls()
		if tls.GetMode() != networkingv1alpha3.ClientTLSSettings_SIMPLE || tls.GetSni() != p.Host ||
			!reflect.DeepEqual(tls.GetSubjectAltNames(), []string{p.Host}) {
			bad("DestinationRule %s: tls must be SIMPLE with sni and subjectAltNames = %s, got %v %q %v",
				p.Host, p.Host, tls.GetMode(), tls.GetSni(), tls.GetSubjectAltNames())
		}
	}
	for h := range ses {
		bad("ServiceEntry %s belongs to no provider", h)
	}
	for h := range drs {
		bad("DestinationRule %s belongs to no provider", h)
	}

	// VirtualService: one route per provider on the routing header, then the 404.
	if o := one("VirtualService"); o != nil {
		if err := checkVirtualService(o.spec.(*networkingv1alpha3.VirtualService), gwName, ec); err != nil {
			errs = append(errs, err)
		}
	}

	// The bootstrap override: exactly envoy.yaml's stats tags, nothing else.
	if len(docs.configMaps) != 1 {
		bad("want one ConfigMap (bootstrap override), got %d", len(docs.configMaps))
	} else {
		cm := docs.configMaps[0]
		var b bootstrapv3.Bootstrap
		if err := unmarshalProto([]byte(cm.Data["custom_bootstrap.json"]), &b); err != nil {
			bad("ConfigMap %s custom_bootstrap.json: %v", cm.Name, err)
		} else if err := checkStatsOnlyBootstrap(&b, ec); err != nil {
			bad("ConfigMap %s custom_bootstrap.json: %v", cm.Name, err)
		}
	}
	return errors.Join(errs...)
}

// samePlugin: a deployment file's plugin configuration is valid and equal to envoy.yaml's.
func samePlugin(what string, raw []byte, ec *envoyConfig) error {
	if _, err := checkDeploymentPlugin(raw); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	same, err := sameJSON(raw, ec.pluginRaw)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !same {
		return fmt.Errorf("%s differs from the plugin configuration in envoy.yaml:\n%s\nvs\n%s", what, raw, ec.pluginRaw)
	}
	return nil
}

// checkStatsOnlyBootstrap: a bootstrap fragment that only adds envoy.yaml's stats tags.
func checkStatsOnlyBootstrap(b *bootstrapv3.Bootstrap, ec *envoyConfig) error {
	if err := validateAll(b); err != nil {
		return err
	}
	want := &bootstrapv3.Bootstrap{StatsConfig: ec.bootstrap.GetStatsConfig()}
	if !proto.Equal(b, want) {
		return errors.New("must hold exactly the stats_config.stats_tags of envoy.yaml")
	}
	return nil
}

func checkEnvoyFilter(ef *networkingv1alpha3.EnvoyFilter, gwSelector map[string]string, ec *envoyConfig) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("EnvoyFilter: "+format, args...)) }
	if !reflect.DeepEqual(ef.GetWorkloadSelector().GetLabels(), gwSelector) {
		bad("workloadSelector %v, want %v", ef.GetWorkloadSelector().GetLabels(), gwSelector)
	}
	patches := map[networkingv1alpha3.EnvoyFilter_ApplyTo]*networkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{}
	for _, p := range ef.GetConfigPatches() {
		if patches[p.GetApplyTo()] != nil {
			bad("more than one %v patch", p.GetApplyTo())
		}
		patches[p.GetApplyTo()] = p
		if p.GetMatch().GetContext() != networkingv1alpha3.EnvoyFilter_GATEWAY {
			bad("%v patch must match context GATEWAY", p.GetApplyTo())
		}
	}
	if len(ef.GetConfigPatches()) != 3 {
		bad("want 3 patches (EXTENSION_CONFIG, HTTP_FILTER, NETWORK_FILTER), got %d", len(ef.GetConfigPatches()))
	}

	// 1. The ECDS resource: a complete, valid Wasm filter config with the flag.
	ecName := ""
	if p := patches[networkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG]; p == nil || p.GetPatch().GetOperation() != networkingv1alpha3.EnvoyFilter_Patch_ADD {
		bad("needs an EXTENSION_CONFIG ADD patch (the only operation istiod honours for it)")
	} else {
		var tec corev3.TypedExtensionConfig
		var w wasmfilterv3.Wasm
		if err := structToProto(p.GetPatch().GetValue(), &tec); err != nil {
			bad("EXTENSION_CONFIG value: %v", err)
		} else if err := tec.GetTypedConfig().UnmarshalTo(&w); err != nil {
			bad("EXTENSION_CONFIG typed_config must be %s: %v", wasmTypeURL, err)
		} else {
			ecName = tec.GetName()
			if uri := w.GetConfig().GetVmConfig().GetCode().GetRemote().GetHttpUri().GetUri(); uri != ociImage {
				bad("code.remote.http_uri.uri %q, want %s (istio-agent fetches it)", uri, ociImage)
			}
			// Envoy never sees the remote block: istio-agent downloads the module and rewrites
			// vm_config.code to a local file before forwarding the resource (pkg/wasm/convert.go,
			// rewriteVMConfig), which is also why istiod itself sends WasmPlugins without sha256.
			// Validate what Envoy receives.
			w.GetConfig().GetVmConfig().Code = &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Local{
				Local: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "/var/lib/istio/data/module.wasm"}}}}
			converted := proto.Clone(&tec).(*corev3.TypedExtensionConfig)
			if err := converted.GetTypedConfig().MarshalFrom(&w); err != nil {
				bad("EXTENSION_CONFIG: %v", err)
			} else if err := validateAll(converted); err != nil {
				bad("EXTENSION_CONFIG value: %v", err)
			} else if dep := deprecatedUses(converted.ProtoReflect(), "extension_config"); len(dep) > 0 {
				bad("EXTENSION_CONFIG value uses deprecated fields: %v", dep)
			}
			raw, err := checkWasmConfig(w.GetConfig(), envKeys(ec.plugin))
			if err != nil {
				errs = append(errs, fmt.Errorf("EnvoyFilter EXTENSION_CONFIG: %w", err))
			} else if err := samePlugin("EnvoyFilter configuration", raw, ec); err != nil {
				errs = append(errs, err)
			}
		}
	}

	// 2. The HTTP filter referring to it over ECDS, where UNSPECIFIED_PHASE would put a WasmPlugin.
	if p := patches[networkingv1alpha3.EnvoyFilter_HTTP_FILTER]; p == nil {
		bad("needs an HTTP_FILTER patch inserting the filter")
	} else {
		fc := p.GetMatch().GetListener().GetFilterChain().GetFilter()
		if p.GetPatch().GetOperation() != networkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE ||
			fc.GetName() != "envoy.filters.network.http_connection_manager" || fc.GetSubFilter().GetName() != "envoy.filters.http.fault" {
			bad("HTTP_FILTER patch must INSERT_BEFORE envoy.filters.http.fault in the HTTP connection manager")
		}
		var hf hcmv3.HttpFilter
		if err := structToProto(p.GetPatch().GetValue(), &hf); err != nil {
			bad("HTTP_FILTER value: %v", err)
		} else if err := validateAll(&hf); err != nil {
			bad("HTTP_FILTER value: %v", err)
		} else {
			cd := hf.GetConfigDiscovery()
			if hf.GetName() != ecName || cd.GetConfigSource().GetAds() == nil || !reflect.DeepEqual(cd.GetTypeUrls(), []string{wasmTypeURL}) {
				bad("HTTP_FILTER value must be named %q and discover it over ADS as %s", ecName, wasmTypeURL)
			}
		}
	}

	// 3. The early header mutation merged into the HTTP connection manager.
	if p := patches[networkingv1alpha3.EnvoyFilter_NETWORK_FILTER]; p == nil || p.GetPatch().GetOperation() != networkingv1alpha3.EnvoyFilter_Patch_MERGE {
		bad("needs a NETWORK_FILTER MERGE patch removing the client's routing header")
	} else {
		var f listenerv3.Filter
		var hcm hcmv3.HttpConnectionManager
		if err := structToProto(p.GetPatch().GetValue(), &f); err != nil {
			bad("NETWORK_FILTER value: %v", err)
		} else if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			bad("NETWORK_FILTER value must be an HttpConnectionManager: %v", err)
		} else {
			// A MERGE fragment is not a complete HCM, so only its parts are validated.
			for _, e := range hcm.GetEarlyHeaderMutationExtensions() {
				if err := validateAll(e); err != nil {
					bad("NETWORK_FILTER value: %v", err)
				}
			}
			if err := checkEarlyMutation(hcm.GetEarlyHeaderMutationExtensions()); err != nil {
				bad("NETWORK_FILTER value: %v", err)
			}
		}
	}
	return errors.Join(errs...)
}

func checkVirtualService(vs *networkingv1alpha3.VirtualService, gwName string, ec *envoyConfig) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("VirtualService: "+format, args...)) }
	if !reflect.DeepEqual(vs.GetHosts(), []string{"*"}) || !reflect.DeepEqual(vs.GetGateways(), []string{gwName}) {
		bad(`hosts must be ["*"] and gateways [%s]`, gwName)
	}
	routes := vs.GetHttp()
	if len(routes) != len(ec.plugin.Providers)+1 {
		return fmt.Errorf("VirtualService: want %d http routes (providers + 404), got %d", len(ec.plugin.Providers)+1, len(routes))
	}
	hosts := map[string]string{}
	for _, p := range ec.plugin.Providers {
		hosts[p.Name] = p.Host
	}
	for _, r := range routes[:len(routes)-1] {
		ms := r.GetMatch()
		if len(ms) != 1 || len(ms[0].GetHeaders()) != 1 || ms[0].GetHeaders()[routingHeader].GetExact() == "" || ms[0].GetUri() != nil {
			bad("route %s must match only %s, exactly", r.GetName(), routingHeader)
			continue
		}
		provider := ms[0].GetHeaders()[routingHeader].GetExact()
		host, ok := hosts[provider]
		if !ok {
			bad("route %s matches unknown provider %q", r.GetName(), provider)
			continue
		}
		delete(hosts, provider)
		if len(r.GetRoute()) != 1 || r.GetRoute()[0].GetDestination().GetHost() != host || r.GetRoute()[0].GetDestination().GetPort().GetNumber() != 80 {
			bad("route %s must go to %s port 80 (its ServiceEntry)", r.GetName(), host)
		}
		if r.GetTimeout() == nil || r.GetTimeout().AsDuration() != 0 {
			bad("route %s: timeout must be 0s", r.GetName())
		}
		if !contains(r.GetHeaders().GetRequest().GetRemove(), routingHeader) {
			bad("route %s must remove the internal routing header", r.GetName())
		}
	}
	for p := range hosts {
		bad("provider %s has no route", p)
	}
	last := routes[len(routes)-1]
	dr := last.GetDirectResponse()
	if len(last.GetMatch()) != 0 || dr == nil || dr.GetStatus() != wantDirectNotFound || last.GetRoute() != nil {
		bad("the last route must match everything and answer 404 directly")
	} else {
		var body map[string]map[string]any
		if err := json.Unmarshal([]byte(dr.GetBody().GetString_()), &body); err != nil || body["error"]["code"] == nil {
			bad("404 body must be an OpenAI-style error envelope: %v", err)
		}
		set := last.GetHeaders().GetResponse().GetSet()
		if set["content-type"] != "application/json" || set["x-aidialect-error"] != body["error"]["code"] {
			bad("404 must set content-type application/json and x-aidialect-error")
		}
	}
	return errors.Join(errs...)
}

// TestIstioManifests: every document in istio/ parses strictly (envelope and istio.io/api spec), the
// EnvoyFilter's Envoy fragments parse strictly and validate against the Envoy 1.35 API, and the whole
// set agrees with envoy.yaml (plugin configuration, module, keys, providers, TLS names, routes, tags).
func TestIstioManifests(t *testing.T) {
	ec := loadEnvoyFile(t)
	docs, err := loadIstio(readYAMLFiles(t, "istio"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkIstio(ec, docs); err != nil {
		t.Fatal(err)
	}
	t.Logf("istio: %d objects, %d ConfigMaps", len(docs.objects), len(docs.configMaps))
}

// TestBrokenIstioManifestsAreRejected: the Istio pipeline fails on broken copies.
func TestBrokenIstioManifestsAreRejected(t *testing.T) {
	ec := loadEnvoyFile(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"misspelled WasmPlugin field", "istio/wasmplugin.yaml", "  pluginConfig:\n", "  pluginConfg:\n", `unknown field "pluginConfg"`},
		{"unknown enum value", "istio/wasmplugin.yaml", "phase: UNSPECIFIED_PHASE", "phase: ROUTING", "invalid value for enum"},
		{"misspelled metadata field", "istio/wasmplugin.yaml", "  namespace: aidialect\nspec:\n  # The dedicated",
			"  namespce: aidialect\nspec:\n  # The dedicated", `unknown field "metadata.namespce"`},
		{"WasmPlugin configuration drift", "istio/wasmplugin.yaml", "      - name: gpt-4o\n", "      - name: gpt-4\n", "differs from the plugin configuration"},
		{"WasmPlugin unknown plugin key", "istio/wasmplugin.yaml", "    unknown_paths: passthrough", "    unknown_path: passthrough",
			`unknown field "unknown_path"`},
		{"inline key in WasmPlugin", "istio/wasmplugin.yaml", "    - name: ETERNALAI_KEY\n      valueFrom: HOST",
			"    - name: ETERNALAI_KEY\n      value: sk-123", "must come from HOST"},
		{"misspelled Envoy field in the EnvoyFilter", "istio/envoyfilter.yaml", "\n            allow_on_headers_stop_iteration: true",
			"\n            allow_on_header_stop_iteration: true", `unknown field "allow_on_header_stop_iteration"`},
		{"flag off in the EnvoyFilter", "istio/envoyfilter.yaml", "\n            allow_on_headers_stop_iteration: true",
			"\n            allow_on_headers_stop_iteration: false", "allow_on_headers_stop_iteration must be true"},
		{"ValidateAll inside the EXTENSION_CONFIG patch", "istio/envoyfilter.yaml", "        name: aidialect.aidialect\n        typed_config:",
			"        name: \"\"\n        typed_config:", "TypedExtensionConfig.Name: value length must be at least 1"},
		{"ValidateAll inside the HTTP_FILTER patch", "istio/envoyfilter.yaml",
			"type_urls:\n          - type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm", "type_urls: []",
			"TypeUrls: value must contain at least 1 item"},
		{"EnvoyFilter MERGE on the WasmPlugin instead", "istio/envoyfilter.yaml", "operation: ADD", "operation: MERGE",
			"needs an EXTENSION_CONFIG ADD patch"},
		{"ECDS name mismatch", "istio/envoyfilter.yaml", "        name: aidialect.aidialect\n        config_discovery:",
			"        name: aidialect\n        config_discovery:", `must be named "aidialect.aidialect"`},
		{"wrong SNI", "istio/serviceentries.yaml", "sni: api.eternalai.org", "sni: eternalai.org", "tls must be SIMPLE with sni"},
		{"route to the wrong host", "istio/serviceentries.yaml", "        host: my-llama.eastus2.models.ai.azure.com\n",
			"        host: my-llama.models.ai.azure.com\n", "route azure-ai must go to"},
		{"route without the header match", "istio/serviceentries.yaml", "          exact: openai", "          prefix: openai",
			"must match only x-aidialect-provider, exactly"},
		{"stats tag drift", "istio/bootstrap-override.yaml", `(\\.code\\.([^.]+))`, `(\\.error\\.([^.]+))`,
			"must hold exactly the stats_config.stats_tags of envoy.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := readYAMLFiles(t, "istio")
			files[c.file] = []byte(mustReplace(t, string(files[c.file]), c.old, c.new))
			docs, err := loadIstio(files)
			if err == nil {
				err = checkIstio(ec, docs)
			}
			wantRejected(t, err, c.file, c.want)
		})
	}
}
