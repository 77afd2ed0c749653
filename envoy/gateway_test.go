package envoyconfig_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

const (
	gatewayAPIGroup = "gateway.networking.k8s.io"
	egGroup         = "gateway.envoyproxy.io"
	listenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
)

// gatewayDocs holds the typed objects of gateway/*.yaml. Each document is decoded with
// decodeYAMLStrict into the Gateway API or Envoy Gateway v1.5 Go type for its kind: unknown,
// duplicate or wrongly-cased keys anywhere (metadata included) are errors, as with the API server's
// strict field validation. Not checked, because only the
// API server has them: the CRDs' OpenAPI patterns/enums and CEL rules (e.g. the PathPrefix value
// format), and Envoy Gateway's own translation (it is simulated for the EnvoyPatchPolicy only).
type gatewayDocs struct {
	gateways      []*gwapiv1.Gateway
	routes        []*gwapiv1.HTTPRoute
	tlsPolicies   []*gwapiv1a3.BackendTLSPolicy
	proxies       []*egv1a1.EnvoyProxy
	extensions    []*egv1a1.EnvoyExtensionPolicy
	patches       []*egv1a1.EnvoyPatchPolicy
	backendPols   []*egv1a1.BackendTrafficPolicy
	clientPols    []*egv1a1.ClientTrafficPolicy
	backends      []*egv1a1.Backend
	routeFilters  []*egv1a1.HTTPRouteFilter
	allNamespaces []string

	egConfig   *egv1a1.EnvoyGatewaySpec // helm/envoy-gateway-values.yaml, config.envoyGateway
	secretDocs map[string]string        // texts that tell operators to create the key Secret
}

const (
	egHelmValuesFile = "gateway/helm/envoy-gateway-values.yaml"
	// Where the Envoy Gateway chart is installed (README.md), i.e. where ControllerNamespace mode runs
	// the Envoy pods.
	egControllerNamespace = "envoy-gateway-system"
	routeTypeURL          = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// readGatewayFiles: gateway/*.yaml, Envoy Gateway's Helm values and the README, keyed by path.
func readGatewayFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := readYAMLFiles(t, "gateway")
	files[egHelmValuesFile] = readFile(t, egHelmValuesFile)
	files[readmeFile] = readFile(t, readmeFile)
	return files
}

func loadGateway(files map[string][]byte) (*gatewayDocs, error) {
	d := &gatewayDocs{secretDocs: map[string]string{}}
	var errs []error
	for _, file := range sortedKeys(files) {
		switch file {
		case egHelmValuesFile:
			var values struct {
				Config struct {
					EnvoyGateway egv1a1.EnvoyGatewaySpec `json:"envoyGateway"`
				} `json:"config"`
			}
			if err := decodeYAMLStrict(files[file], &values); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
			}
			d.egConfig = &values.Config.EnvoyGateway
			continue
		case readmeFile:
			d.secretDocs["README.md (Envoy Gateway)"] = readmeSection(string(files[file]), "Envoy Gateway")
			continue
		case "gateway/gateway.yaml":
			d.secretDocs[file] = string(files[file])
		}
		for i, doc := range splitYAML(files[file]) {
			where := fmt.Sprintf("%s document %d", file, i+1)
			tm, err := typeMeta(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			var obj interface{ GetNamespace() string }
			switch tm.APIVersion + " " + tm.Kind {
			case "gateway.networking.k8s.io/v1 Gateway":
				o := &gwapiv1.Gateway{}
				d.gateways, obj = append(d.gateways, o), o
			case "gateway.networking.k8s.io/v1 HTTPRoute":
				o := &gwapiv1.HTTPRoute{}
				d.routes, obj = append(d.routes, o), o
			case "gateway.networking.k8s.io/v1alpha3 BackendTLSPolicy":
				o := &gwapiv1a3.BackendTLSPolicy{}
				d.tlsPolicies, obj = append(d.tlsPolicies, o), o
			case "gateway.envoyproxy.io/v1alpha1 EnvoyProxy":
				o := &egv1a1.EnvoyProxy{}
				d.proxies, obj = append(d.proxies, o), o
			case "gateway.envoyproxy.io/v1alpha1 EnvoyExtensionPolicy":
				o := &egv1a1.EnvoyExtensionPolicy{}
				d.extensions, obj = append(d.extensions, o), o
			case "gateway.envoyproxy.io/v1alpha1 EnvoyPatchPolicy":
				o := &egv1a1.EnvoyPatchPolicy{}
				d.patches, obj = append(d.patches, o), o
			case "gateway.envoyproxy.io/v1alpha1 BackendTrafficPolicy":
				o := &egv1a1.BackendTrafficPolicy{}
				d.backendPols, obj = append(d.backendPols, o), o
			case "gateway.envoyproxy.io/v1alpha1 ClientTrafficPolicy":
				o := &egv1a1.ClientTrafficPolicy{}
				d.clientPols, obj = append(d.clientPols, o), o
			case "gateway.envoyproxy.io/v1alpha1 Backend":
				o := &egv1a1.Backend{}
				d.backends, obj = append(d.backends, o), o
			case "gateway.envoyproxy.io/v1alpha1 HTTPRouteFilter":
				o := &egv1a1.HTTPRouteFilter{}
				d.routeFilters, obj = append(d.routeFilters, o), o
			default:
				errs = append(errs, fmt.Errorf("%s: unexpected %s %s", where, tm.APIVersion, tm.Kind))
				continue
			}
			if err := decodeYAMLStrict([]byte(doc), obj); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %w", where, tm.Kind, err))
				continue
			}
			d.allNamespaces = append(d.allNamespaces, obj.GetNamespace())
		}
	}
	return d, errors.Join(errs...)
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return sortedCopy(keys)
}

func targetsGateway(refs []egv1a1.PolicyTargetReferences, gw string) bool {
	for _, r := range refs {
		if len(r.TargetRefs) != 1 || string(r.TargetRefs[0].Group) != gatewayAPIGroup ||
			string(r.TargetRefs[0].Kind) != "Gateway" || string(r.TargetRefs[0].Name) != gw {
			return false
		}
	}
	return true
}

func checkGateway(ec *envoyConfig, d *gatewayDocs) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, ns := range d.allNamespaces {
		if ns != namespace {
			bad("object in namespace %q, want %q", ns, namespace)
		}
	}
	counts := map[string]int{"Gateway": len(d.gateways), "HTTPRoute": len(d.routes), "EnvoyProxy": len(d.proxies),
		"EnvoyExtensionPolicy": len(d.extensions), "EnvoyPatchPolicy": len(d.patches), "BackendTrafficPolicy": len(d.backendPols),
		"ClientTrafficPolicy": len(d.clientPols), "HTTPRouteFilter": len(d.routeFilters)}
	for kind, n := range counts {
		if n != 1 {
			bad("want exactly one %s, got %d", kind, n)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	gw, route, proxy, eep := d.gateways[0], d.routes[0], d.proxies[0], d.extensions[0]
	maxReq := *ec.plugin.MaxRequestBytes

	// Gateway: one HTTP listener without hostname, parameters from our EnvoyProxy.
	if len(gw.Spec.Listeners) != 1 || gw.Spec.Listeners[0].Hostname != nil || gw.Spec.Listeners[0].Protocol != gwapiv1.HTTPProtocolType {
		bad("Gateway %s: want one HTTP listener without hostname (the filter rewrites :authority)", gw.Name)
	}
	if pr := gw.Spec.Infrastructure; pr == nil || pr.ParametersRef == nil || pr.ParametersRef.Group != egGroup ||
		pr.ParametersRef.Kind != "EnvoyProxy" || pr.ParametersRef.Name != proxy.Name {
		bad("Gateway %s: infrastructure.parametersRef must name EnvoyProxy %s", gw.Name, proxy.Name)
	}

	// EnvoyProxy: keys from a Secret into the container env; bootstrap merge = envoy.yaml's stats tags.
	var env []string
	if k := proxy.Spec.Provider; k != nil && k.Kubernetes != nil && k.Kubernetes.EnvoyDeployment != nil && k.Kubernetes.EnvoyDeployment.Container != nil {
		for _, e := range k.Kubernetes.EnvoyDeployment.Container.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				bad("EnvoyProxy env %s must come from a Secret, never inline", e.Name)
			}
			env = append(env, e.Name)
		}
	}
	if env = sortedCopy(env); !reflect.DeepEqual(env, envKeys(ec.plugin)) {
		bad("EnvoyProxy container env %v, want %v", env, envKeys(ec.plugin))
	}
	if bs := proxy.Spec.Bootstrap; bs == nil || bs.Type == nil || *bs.Type != egv1a1.BootstrapTypeMerge || bs.Value == nil {
		bad("EnvoyProxy bootstrap must be a Merge with a value")
	} else {
		var b bootstrapv3.Bootstrap
		if err := yamlToProto([]byte(*bs.Value), &b); err != nil {
			bad("EnvoyProxy bootstrap: %v", err)
		} else if err := checkStatsOnlyBootstrap(&b, ec); err != nil {
			bad("EnvoyProxy bootstrap: %v", err)
		}
	}

	// EnvoyExtensionPolicy: the module, keys and configuration of envoy.yaml.
	if !targetsGateway([]egv1a1.PolicyTargetReferences{eep.Spec.PolicyTargetReferences}, gw.Name) {
		bad("EnvoyExtensionPolicy must target Gateway %s", gw.Name)
	}
	if len(eep.Spec.Wasm) != 1 {
		bad("EnvoyExtensionPolicy: want one wasm entry")
	} else {
		w := eep.Spec.Wasm[0]
		if w.Name == nil || *w.Name != pluginName || w.RootID == nil || *w.RootID != pluginName {
			bad("EnvoyExtensionPolicy wasm name and rootID must be %q", pluginName)
		}
		if w.Code.Type != egv1a1.ImageWasmCodeSourceType || w.Code.Image == nil || w.Code.Image.URL != strings.TrimPrefix(ociImage, "oci://") {
			bad("EnvoyExtensionPolicy code must be the Image %s", strings.TrimPrefix(ociImage, "oci://"))
		}
		if w.FailOpen == nil || *w.FailOpen {
			bad("EnvoyExtensionPolicy failOpen must be set to false")
		}
		if w.Env == nil || !reflect.DeepEqual(sortedCopy(w.Env.HostKeys), envKeys(ec.plugin)) {
			bad("EnvoyExtensionPolicy env.hostKeys must be %v", envKeys(ec.plugin))
		}
		if w.Config == nil {
			bad("EnvoyExtensionPolicy config missing")
		} else if err := samePlugin("EnvoyExtensionPolicy config", w.Config.Raw, ec); err != nil {
			errs = append(errs, err)
		}
		// The patch must land on exactly this filter and give it envoy.yaml's PluginConfig settings.
		if err := checkPatchPolicy(d.patches[0], gw, eep, w, route); err != nil {
			errs = append(errs, err)
		}
	}

	// Traffic policies: buffers above max_request_bytes, no route timeout, header guard.
	btp := d.backendPols[0]
	if !targetsGateway([]egv1a1.PolicyTargetReferences{btp.Spec.PolicyTargetReferences}, gw.Name) {
		bad("BackendTrafficPolicy must target Gateway %s", gw.Name)
	}
	if c := btp.Spec.Connection; c == nil || c.BufferLimit == nil || c.BufferLimit.Value() < bufferLimitBytes {
		bad("BackendTrafficPolicy connection.bufferLimit must be >= %d", bufferLimitBytes)
	}
	if t := btp.Spec.Timeout; t == nil || t.HTTP == nil || t.HTTP.RequestTimeout == nil || mustDuration(string(*t.HTTP.RequestTimeout)) != 0 {
		bad("BackendTrafficPolicy timeout.http.requestTimeout must be 0s (streams)")
	}
	cb := btp.Spec.CircuitBreaker
	if cb == nil {
		cb = &egv1a1.CircuitBreaker{}
	}
	i64 := func(v *int64) *uint64 {
		if v == nil {
			return nil
		}
		n := uint64(*v)
		return &n
	}
	if err := checkCircuitBreaker("BackendTrafficPolicy circuitBreaker", map[string]*uint64{
		"maxConnections":      i64(cb.MaxConnections),
		"maxPendingRequests":  i64(cb.MaxPendingRequests),
		"maxParallelRequests": i64(cb.MaxParallelRequests),
	}, "maxConnections", "maxParallelRequests", true); err != nil {
		errs = append(errs, err)
	}
	ctp := d.clientPols[0]
	if !targetsGateway([]egv1a1.PolicyTargetReferences{ctp.Spec.PolicyTargetReferences}, gw.Name) {
		bad("ClientTrafficPolicy must target Gateway %s", gw.Name)
	}
	if c := ctp.Spec.Connection; c == nil || c.BufferLimit == nil || c.BufferLimit.Value() < bufferLimitBytes || c.BufferLimit.Value() <= maxReq {
		bad("ClientTrafficPolicy connection.bufferLimit must be >= %d and > max_request_bytes (%d)", bufferLimitBytes, maxReq)
	}
	if h := ctp.Spec.Headers; h == nil || h.EarlyRequestHeaders == nil || !contains(h.EarlyRequestHeaders.Remove, routingHeader) {
		bad("ClientTrafficPolicy headers.earlyRequestHeaders must remove %s", routingHeader)
	}

	if err := checkHTTPRoute(ec, d, gw, route); err != nil {
		errs = append(errs, err)
	}

	// Envoy Gateway's own configuration, and the Secret in the namespace where it runs the Envoy pods.
	if c := d.egConfig; c == nil {
		bad("%s: missing", egHelmValuesFile)
	} else {
		if c.ExtensionAPIs == nil || !c.ExtensionAPIs.EnableBackend || !c.ExtensionAPIs.EnableEnvoyPatchPolicy {
			bad("%s: extensionApis.enableBackend and enableEnvoyPatchPolicy must be true (Backends, EnvoyPatchPolicy)", egHelmValuesFile)
		}
		podNamespace, mode := egControllerNamespace, egv1a1.KubernetesDeployModeTypeControllerNamespace
		if c.Provider != nil && c.Provider.Kubernetes != nil && c.Provider.Kubernetes.Deploy != nil && c.Provider.Kubernetes.Deploy.Type != nil {
			mode = *c.Provider.Kubernetes.Deploy.Type
		}
		if mode == egv1a1.KubernetesDeployModeTypeGatewayNamespace {
			podNamespace = gw.Namespace
		}
		for _, where := range sortedMapKeys(d.secretDocs) {
			if err := checkSecretNamespace(where, d.secretDocs[where], podNamespace, fmt.Sprintf(
				"with deploy.type %s Envoy Gateway runs the Envoy pods in %s, and the EnvoyProxy's secretKeyRef is resolved there", mode, podNamespace)); err != nil {
				errs = append(errs, err)
			}
		}
		for _, cmd := range shellCommands(d.secretDocs["README.md (Envoy Gateway)"], "helm install eg ") {
			if m := namespaceFlag.FindStringSubmatch(cmd); m == nil || m[1] != egControllerNamespace || !strings.Contains(cmd, egHelmValuesFile) {
				bad("README.md (Envoy Gateway): `helm install eg` must use -n %s and -f envoy/%s", egControllerNamespace, egHelmValuesFile)
			}
		}
	}
	return errors.Join(errs...)
}

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}

func checkHTTPRoute(ec *envoyConfig, d *gatewayDocs, gw *gwapiv1.Gateway, route *gwapiv1.HTTPRoute) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("HTTPRoute %s: "+format, append([]any{route.Name}, args...)...))
	}
	if len(route.Spec.ParentRefs) != 1 || string(route.Spec.ParentRefs[0].Name) != gw.Name || len(route.Spec.Hostnames) != 0 {
		bad("must attach to Gateway %s, without hostnames", gw.Name)
	}
	backends := map[string]*egv1a1.Backend{}
	for _, b := range d.backends {
		backends[b.Name] = b
	}
	tls := map[string]*gwapiv1a3.BackendTLSPolicy{}
	for _, p := range d.tlsPolicies {
		for _, t := range p.Spec.TargetRefs {
			if string(t.Group) == egGroup && string(t.Kind) == "Backend" {
				tls[string(t.Name)] = p
			}
		}
	}
	hosts := map[string]string{}
	for _, p := range ec.plugin.Providers {
		hosts[p.Name] = p.Host
	}
	rules := route.Spec.Rules
	if len(rules) != len(ec.plugin.Providers)+1 {
		return fmt.Errorf("HTTPRoute %s: want %d rules (providers + catch-all), got %d", route.Name, len(ec.plugin.Providers)+1, len(rules))
	}
	isPrefixSlash := func(m gwapiv1.HTTPRouteMatch) bool {
		return m.Path != nil && m.Path.Type != nil && *m.Path.Type == gwapiv1.PathMatchPathPrefix && m.Path.Value != nil && *m.Path.Value == "/"
	}
	for i, r := range rules[:len(rules)-1] {
		if len(r.Matches) != 1 || !isPrefixSlash(r.Matches[0]) || len(r.Matches[0].Headers) != 1 {
			bad("rule %d must match PathPrefix / and one header", i)
			continue
		}
		h := r.Matches[0].Headers[0]
		if h.Type == nil || *h.Type != gwapiv1.HeaderMatchExact || string(h.Name) != routingHeader {
			bad("rule %d must match %s exactly", i, routingHeader)
			continue
		}
		provider := h.Value
		host, ok := hosts[provider]
		if !ok {
			bad("rule %d matches unknown provider %q", i, provider)
			continue
		}
		delete(hosts, provider)
		if len(r.BackendRefs) != 1 {
			bad("rule %s: want one backendRef", provider)
			continue
		}
		ref := r.BackendRefs[0].BackendObjectReference
		if ref.Group == nil || string(*ref.Group) != egGroup || ref.Kind == nil || string(*ref.Kind) != "Backend" || string(ref.Name) != provider {
			bad("rule %s must point to Backend %s", provider, provider)
			continue
		}
		removes := false
		for _, f := range r.Filters {
			if f.Type == gwapiv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil && contains(f.RequestHeaderModifier.Remove, routingHeader) {
				removes = true
			}
		}
		if !removes {
			bad("rule %s must remove the internal routing header", provider)
		}
		b := backends[provider]
		if b == nil || len(b.Spec.Endpoints) != 1 || b.Spec.Endpoints[0].FQDN == nil ||
			b.Spec.Endpoints[0].FQDN.Hostname != host || b.Spec.Endpoints[0].FQDN.Port != 443 {
			bad("Backend %s must be the single FQDN endpoint %s:443", provider, host)
		}
		delete(backends, provider)
		p := tls[provider]
		if p == nil || string(p.Spec.Validation.Hostname) != host || p.Spec.Validation.WellKnownCACertificates == nil ||
			*p.Spec.Validation.WellKnownCACertificates != gwapiv1a3.WellKnownCACertificatesSystem {
			bad("Backend %s needs a BackendTLSPolicy with hostname %s and the System CAs", provider, host)
		}
	}
	for p := range hosts {
		bad("provider %s has no rule", p)
	}
	for name := range backends {
		bad("Backend %s belongs to no provider", name)
	}
	if len(d.tlsPolicies) != len(ec.plugin.Providers) {
		bad("want one BackendTLSPolicy per provider, got %d", len(d.tlsPolicies))
	}

	// The catch-all: where every request starts (and where Envoy Gateway enables the filter).
	last := rules[len(rules)-1]
	if len(last.Matches) != 1 || !isPrefixSlash(last.Matches[0]) || len(last.Matches[0].Headers) != 0 || len(last.BackendRefs) != 0 {
		bad("the last rule must match PathPrefix / without headers and have no backend")
	}
	direct, errHeader := false, ""
	for _, f := range last.Filters {
		switch {
		case f.Type == gwapiv1.HTTPRouteFilterExtensionRef && f.ExtensionRef != nil && string(f.ExtensionRef.Group) == egGroup &&
			string(f.ExtensionRef.Kind) == "HTTPRouteFilter" && string(f.ExtensionRef.Name) == d.routeFilters[0].Name:
			direct = true
		case f.Type == gwapiv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			for _, h := range f.ResponseHeaderModifier.Set {
				if string(h.Name) == "x-aidialect-error" {
					errHeader = h.Value
				}
			}
		}
	}
	dr := d.routeFilters[0].Spec.DirectResponse
	if !direct || dr == nil || dr.StatusCode == nil || *dr.StatusCode != wantDirectNotFound || dr.ContentType == nil ||
		*dr.ContentType != "application/json" || dr.Body == nil || dr.Body.Inline == nil {
		bad("the last rule must answer through HTTPRouteFilter %s: 404, application/json, inline body", d.routeFilters[0].Name)
	} else {
		var body map[string]map[string]any
		if err := json.Unmarshal([]byte(*dr.Body.Inline), &body); err != nil || body["error"]["code"] == nil || body["error"]["code"] != errHeader {
			bad("404 body must be an OpenAI-style error envelope whose code is the x-aidialect-error header (%q): %v", errHeader, err)
		}
	}
	return errors.Join(errs...)
}

// egListener builds the listener Envoy Gateway v1.5 generates for this Gateway and policy, as far as
// the patch can see it (internal/xds/translator/wasm.go and listener.go): the HCM lists every Wasm
// filter, disabled, named envoy.filters.http.wasm/<irConfigNameForWasm>, i.e.
// envoyextensionpolicy/<namespace>/<name>/wasm/<index>; the code is fetched from Envoy Gateway's
// wasm cache over HTTP; the listener is named <gateway ns>/<gateway name>/<listener name>.
func egListener(gw *gwapiv1.Gateway, eep *egv1a1.EnvoyExtensionPolicy, w egv1a1.Wasm) (*listenerv3.Listener, error) {
	irName := fmt.Sprintf("envoyextensionpolicy/%s/%s/wasm/0", eep.Namespace, eep.Name)
	cfg, err := anypb.New(wrapperspb.String(string(w.Config.Raw)))
	if err != nil {
		return nil, err
	}
	wasmName := irName
	if w.Name != nil {
		wasmName = *w.Name
	}
	pc := &wasmv3.PluginConfig{
		Name:          wasmName,
		Configuration: cfg,
		Vm: &wasmv3.PluginConfig_VmConfig{VmConfig: &wasmv3.VmConfig{
			VmId:    irName,
			Runtime: "envoy.wasm.runtime.v8",
			Code: &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Remote{Remote: &corev3.RemoteDataSource{
				HttpUri: &corev3.HttpUri{
					Uri:              "https://envoy-gateway.envoy-gateway-system.svc.cluster.local:18002/aidialect.wasm",
					HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "wasm_cluster"},
					Timeout:          durationpb.New(10 * time.Second),
				},
				Sha256: strings.Repeat("0", 64),
			}}},
			EnvironmentVariables: &wasmv3.EnvironmentVariables{HostEnvKeys: w.Env.HostKeys},
		}},
	}
	if w.RootID != nil {
		pc.RootId = *w.RootID
	}
	wasmAny, err := anypb.New(&wasmfilterv3.Wasm{Config: pc})
	if err != nil {
		return nil, err
	}
	routerAny, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcmAny, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "http-80",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: fmt.Sprintf("%s/%s/%s", gw.Namespace, gw.Name, gw.Spec.Listeners[0].Name),
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.wasm/" + irName, Disabled: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: wasmAny}},
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: routerAny}},
		},
	})
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{
		Name: fmt.Sprintf("%s/%s/%s", gw.Namespace, gw.Name, gw.Spec.Listeners[0].Name),
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 10080}}}},
		DefaultFilterChain: &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcmAny}}}},
	}, nil
}

// egRouteConfig builds the route configuration Envoy Gateway v1.5 generates for the HTTPRoute, as far
// as the patch can see it (internal/xds/translator/route.go): one route per rule in order, forwarding
// rules with a route action whose timeout is the BackendTrafficPolicy's requestTimeout (0s) and whose
// idle_timeout Envoy Gateway derives from it (0s when the request timeout is 0), the catch-all as a
// direct response.
func egRouteConfig(gw *gwapiv1.Gateway, route *gwapiv1.HTTPRoute) *routev3.RouteConfiguration {
	name := fmt.Sprintf("%s/%s/%s", gw.Namespace, gw.Name, gw.Spec.Listeners[0].Name)
	vh := &routev3.VirtualHost{Name: name + "/*", Domains: []string{"*"}}
	for i, r := range route.Spec.Rules {
		rt := &routev3.Route{
			Name:  fmt.Sprintf("httproute/%s/%s/rule/%d/match/0/*", route.Namespace, route.Name, i),
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		}
		if len(r.BackendRefs) == 0 {
			rt.Action = &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: wantDirectNotFound}}
		} else {
			rt.Action = &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: fmt.Sprintf("httproute/%s/%s/rule/%d", route.Namespace, route.Name, i)},
				Timeout:          durationpb.New(0),
				IdleTimeout:      durationpb.New(0),
			}}
		}
		vh.Routes = append(vh.Routes, rt)
	}
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{vh}}
}

// applyEGPatch applies one `add` JSON patch the way Envoy Gateway does (JSONPath located with the
// same library, ojg, then the op at every location) and returns the number of locations.
func applyEGPatch(doc any, op egv1a1.JSONPatchOperation) (int, error) {
	if op.Op != egv1a1.JSONPatchOperationType("add") || op.JSONPath == nil || op.Path == nil || op.Value == nil ||
		strings.Count(*op.Path, "/") != 1 || !strings.HasPrefix(*op.Path, "/") {
		return 0, errors.New("this check handles `add` with jsonPath and a one-segment path only")
	}
	x, err := jp.ParseString(*op.JSONPath)
	if err != nil {
		return 0, fmt.Errorf("jsonPath: %w", err)
	}
	hits := x.Get(doc)
	for _, h := range hits {
		obj, ok := h.(map[string]any)
		if !ok {
			return 0, errors.New("jsonPath must select objects")
		}
		var v any
		if err := json.Unmarshal(op.Value.Raw, &v); err != nil {
			return 0, err
		}
		obj[strings.TrimPrefix(*op.Path, "/")] = v
	}
	return len(hits), nil
}

// checkPatchPolicy applies the EnvoyPatchPolicy the way Envoy Gateway does (protojson with proto
// names, JSONPath located with ojg, then the JSON patch op), and checks that each listener JSONPath
// hits exactly one node, that the patched listener and route configuration parse strictly and pass
// ValidateAll, that the wasm filter carries envoy.yaml's PluginConfig settings (flag, FAIL_RELOAD, name,
// keys, configuration), and that every forwarding route has a finite idle_timeout.
func checkPatchPolicy(epp *egv1a1.EnvoyPatchPolicy, gw *gwapiv1.Gateway, eep *egv1a1.EnvoyExtensionPolicy, w egv1a1.Wasm, route *gwapiv1.HTTPRoute) error {
	if epp.Spec.Type != egv1a1.JSONPatchEnvoyPatchType || string(epp.Spec.TargetRef.Kind) != "Gateway" || string(epp.Spec.TargetRef.Name) != gw.Name {
		return fmt.Errorf("EnvoyPatchPolicy: must be a JSONPatch targeting Gateway %s", gw.Name)
	}
	if w.Env == nil || w.Config == nil {
		return errors.New("EnvoyPatchPolicy: cannot simulate without the wasm env and config")
	}
	l, err := egListener(gw, eep, w)
	if err != nil {
		return err
	}
	rc := egRouteConfig(gw, route)
	docs := map[string]any{}
	names := map[string]string{listenerTypeURL: l.GetName(), routeTypeURL: rc.GetName()}
	for typeURL, m := range map[string]proto.Message{listenerTypeURL: l, routeTypeURL: rc} {
		js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			return err
		}
		if docs[typeURL], err = oj.Parse(js); err != nil {
			return err
		}
	}
	for i, p := range epp.Spec.JSONPatches {
		doc := docs[string(p.Type)]
		if doc == nil || p.Name != names[string(p.Type)] {
			return fmt.Errorf("EnvoyPatchPolicy patch %d: targets %s %q, want %s %q or %s %q", i, p.Type, p.Name,
				listenerTypeURL, l.GetName(), routeTypeURL, rc.GetName())
		}
		n, err := applyEGPatch(doc, p.Operation)
		if err != nil {
			return fmt.Errorf("EnvoyPatchPolicy patch %d: %w", i, err)
		}
		if string(p.Type) == listenerTypeURL && n != 1 {
			return fmt.Errorf("EnvoyPatchPolicy patch %d: jsonPath %s matches %d nodes in the generated listener, want 1", i, *p.Operation.JSONPath, n)
		}
		if n == 0 {
			return fmt.Errorf("EnvoyPatchPolicy patch %d: jsonPath %s matches nothing in the generated %s", i, *p.Operation.JSONPath, p.Type)
		}
	}
	var patchedRC routev3.RouteConfiguration
	if err := unmarshalProto([]byte(oj.JSON(docs[routeTypeURL])), &patchedRC); err != nil {
		return fmt.Errorf("EnvoyPatchPolicy: patched route configuration: %w", err)
	}
	if err := validateAll(&patchedRC); err != nil {
		return fmt.Errorf("EnvoyPatchPolicy: patched route configuration: %w", err)
	}
	for _, r := range patchedRC.GetVirtualHosts()[0].GetRoutes() {
		if ra := r.GetRoute(); ra != nil {
			// Envoy Gateway sets it to 0 with requestTimeout 0s, and a route's idle_timeout overrides the
			// ClientTrafficPolicy's stream idle timeout.
			if err := checkIdleTimeout("idle_timeout of route "+r.GetName()+" (Envoy Gateway sets 0 with requestTimeout 0s)", ra.GetIdleTimeout()); err != nil {
				return fmt.Errorf("EnvoyPatchPolicy: %w", err)
			}
			if rp := ra.GetRetryPolicy(); rp.GetPerTryIdleTimeout().AsDuration() <= 0 || rp.GetRetryOn() != "connect-failure,refused-stream" {
				return fmt.Errorf("EnvoyPatchPolicy: route %s: retry policy %v, want ../envoy.yaml's (connect-failure,refused-stream and a per_try_idle_timeout, so a silent provider is failed over)", r.GetName(), rp)
			}
		}
	}
	var patched listenerv3.Listener
	if err := unmarshalProto([]byte(oj.JSON(docs[listenerTypeURL])), &patched); err != nil {
		return fmt.Errorf("EnvoyPatchPolicy: patched listener: %w", err)
	}
	if err := validateAll(&patched); err != nil {
		return fmt.Errorf("EnvoyPatchPolicy: patched listener: %w", err)
	}
	var hcm hcmv3.HttpConnectionManager
	var wasm wasmfilterv3.Wasm
	if err := patched.GetDefaultFilterChain().GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return err
	}
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&wasm); err != nil {
		return err
	}
	if _, err := checkWasmConfig(wasm.GetConfig(), sortedCopy(w.Env.HostKeys)); err != nil {
		return fmt.Errorf("EnvoyExtensionPolicy + EnvoyPatchPolicy: %w", err)
	}
	if !proto.Equal(hcm.GetHttpFilters()[1], mustUnmarshalRouter(l)) {
		return errors.New("EnvoyPatchPolicy: changed more than the wasm filter")
	}
	return nil
}

func mustUnmarshalRouter(l *listenerv3.Listener) *hcmv3.HttpFilter {
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetDefaultFilterChain().GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		panic(err)
	}
	return hcm.GetHttpFilters()[1]
}

// TestGatewayManifests: every document in gateway/ parses strictly into the Gateway API / Envoy
// Gateway v1.5 types, the EnvoyProxy bootstrap parses strictly against the Envoy 1.35 API, the
// EnvoyPatchPolicy lands on the generated wasm filter, and everything agrees with envoy.yaml.
func TestGatewayManifests(t *testing.T) {
	ec := loadEnvoyFile(t)
	d, err := loadGateway(readGatewayFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkGateway(ec, d); err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway: %d objects", len(d.allNamespaces))
}

// TestBrokenGatewayManifestsAreRejected: the Envoy Gateway pipeline fails on broken copies.
func TestBrokenGatewayManifestsAreRejected(t *testing.T) {
	ec := loadEnvoyFile(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"misspelled policy field", "gateway/envoyextensionpolicy.yaml", "    rootID: aidialect", "    rootId: aidialect", `unknown field "spec.wasm[0].rootId"`},
		{"field name in the wrong case", "gateway/envoyextensionpolicy.yaml", "    failOpen: false", "    failopen: false", `unknown field "spec.wasm[0].failopen"`},
		{"misspelled nested field", "gateway/backendtrafficpolicy.yaml", "      requestTimeout: 0s", "      requestTimout: 0s", `unknown field "spec.timeout.http.requestTimout"`},
		{"wrong type", "gateway/httproute.yaml", "  - fqdn: { hostname: api.eternalai.org, port: 443 }", "  - fqdn: { hostname: api.eternalai.org, port: https }",
			"cannot unmarshal string"},
		{"unknown kind", "gateway/httproute.yaml", "kind: HTTPRouteFilter\nmetadata:", "kind: HTTPRouteFilters\nmetadata:", "unexpected gateway.envoyproxy.io/v1alpha1 HTTPRouteFilters"},
		{"configuration drift", "gateway/envoyextensionpolicy.yaml", "      default_provider: openai", "      default_provider: azure-openai",
			"differs from the plugin configuration"},
		{"fail open", "gateway/envoyextensionpolicy.yaml", "    failOpen: false", "    failOpen: true", "failOpen must be set to false"},
		{"patch misses the filter", "gateway/envoyextensionpolicy.yaml",
			"jsonPath: \"$..http_filters[?(@.name == 'envoy.filters.http.wasm/envoyextensionpolicy/aidialect/aidialect/wasm/0')].typed_config.config\"\n      path: /allow_on_headers_stop_iteration",
			"jsonPath: \"$..http_filters[?(@.name == 'envoy.filters.http.wasm/aidialect')].typed_config.config\"\n      path: /allow_on_headers_stop_iteration",
			"matches 0 nodes"},
		{"patch sets a misspelled field", "gateway/envoyextensionpolicy.yaml", "path: /allow_on_headers_stop_iteration",
			"path: /allow_on_header_stop_iteration", `unknown field "allow_on_header_stop_iteration"`},
		{"patch sets an invalid value", "gateway/envoyextensionpolicy.yaml", "value: FAIL_RELOAD", "value: RELOAD", "invalid value for enum"},
		{"patch on the wrong listener", "gateway/envoyextensionpolicy.yaml", "    name: aidialect/aidialect/http\n    operation:\n      op: add\n      jsonPath: \"$..http_filters[?(@.name == 'envoy.filters.http.wasm/envoyextensionpolicy/aidialect/aidialect/wasm/0')].typed_config.config\"\n      path: /failure_policy",
			"    name: default/eg/http\n    operation:\n      op: add\n      jsonPath: \"$..http_filters[?(@.name == 'envoy.filters.http.wasm/envoyextensionpolicy/aidialect/aidialect/wasm/0')].typed_config.config\"\n      path: /failure_policy",
			`targets type.googleapis.com/envoy.config.listener.v3.Listener "default/eg/http"`},
		{"client buffer too small", "gateway/backendtrafficpolicy.yaml", "  connection:\n    bufferLimit: 16Mi\n  headers:",
			"  connection:\n    bufferLimit: 1Mi\n  headers:", "ClientTrafficPolicy connection.bufferLimit"},
		{"stream-cutting timeout", "gateway/backendtrafficpolicy.yaml", "requestTimeout: 0s", "requestTimeout: 15s", "requestTimeout must be 0s"},
		{"wrong TLS hostname", "gateway/httproute.yaml", "    hostname: api.openai.com", "    hostname: openai.com", "needs a BackendTLSPolicy with hostname api.openai.com"},
		{"header match on the wrong header", "gateway/httproute.yaml", "{ type: Exact, name: x-aidialect-provider, value: azure-ai }",
			"{ type: Exact, name: x-provider, value: azure-ai }", "must match x-aidialect-provider exactly"},
		{"no catch-all", "gateway/httproute.yaml", "  - matches:\n    - path: { type: PathPrefix, value: / }\n    filters:\n    - type: ExtensionRef",
			"  - matches:\n    - path: { type: PathPrefix, value: /v1 }\n    filters:\n    - type: ExtensionRef", "the last rule must match PathPrefix /"},
		{"inline secret", "gateway/gateway.yaml", "          - name: ETERNALAI_KEY\n            valueFrom:\n              secretKeyRef: { name: aidialect-provider-keys, key: ETERNALAI_KEY }",
			"          - name: ETERNALAI_KEY\n            value: sk-123", "must come from a Secret"},
		{"missing idle timeout", "gateway/envoyextensionpolicy.yaml",
			"  - type: type.googleapis.com/envoy.config.route.v3.RouteConfiguration\n    name: aidialect/aidialect/http\n    operation:\n      op: add\n      jsonPath: \"$.virtual_hosts[*].routes[*].route\"\n      path: /idle_timeout\n      value: 900s\n",
			"", "idle_timeout of route httproute/aidialect/aidialect/rule/0/match/0/* (Envoy Gateway sets 0 with requestTimeout 0s) is missing or 0"},
		{"idle timeout patch misses the routes", "gateway/envoyextensionpolicy.yaml", "jsonPath: \"$.virtual_hosts[*].routes[*].route\"\n      path: /idle_timeout",
			"jsonPath: \"$.virtual_hosts[*].route\"\n      path: /idle_timeout", "matches nothing in the generated type.googleapis.com/envoy.config.route.v3.RouteConfiguration"},
		{"no retry policy patch", "gateway/envoyextensionpolicy.yaml", "      path: /retry_policy\n", "      path: /retry_policy_unused\n",
			"patched route configuration"},
		{"retrying 5xx on the same provider", "gateway/envoyextensionpolicy.yaml", "        retry_on: connect-failure,refused-stream\n",
			"        retry_on: 5xx\n", "want ../envoy.yaml's"},
		{"idle timeout patch with a bad duration", "gateway/envoyextensionpolicy.yaml", "      value: 900s\n", "      value: 15 minutes\n",
			"patched route configuration"},
		{"unbounded circuit breakers", "gateway/backendtrafficpolicy.yaml", "    maxParallelRequests: 8192", "    maxParallelRequests: 4294967295",
			"BackendTrafficPolicy circuitBreaker: maxParallelRequests is 4294967295, unbounded in effect"},
		{"default circuit breakers", "gateway/backendtrafficpolicy.yaml",
			"  circuitBreaker:\n    maxConnections: 8192\n    maxPendingRequests: 8192\n    maxParallelRequests: 8192\n", "",
			"BackendTrafficPolicy circuitBreaker: maxConnections is not set"},
		{"Secret namespace", readmeFile, "kubectl -n envoy-gateway-system create secret generic aidialect-provider-keys",
			"kubectl -n aidialect create secret generic aidialect-provider-keys",
			`README.md (Envoy Gateway): Secret namespace "aidialect", want "envoy-gateway-system"`},
		{"Secret namespace in the EnvoyProxy comment", "gateway/gateway.yaml", "#   kubectl -n envoy-gateway-system create secret",
			"#   kubectl -n aidialect create secret", `gateway/gateway.yaml: Secret namespace "aidialect", want "envoy-gateway-system"`},
		{"pods moved without the Secret", egHelmValuesFile, "          type: ControllerNamespace", "          type: GatewayNamespace",
			`Secret namespace "envoy-gateway-system", want "aidialect"`},
		{"extension API left off", egHelmValuesFile, "      enableBackend: true", "      enableBackend: false",
			"extensionApis.enableBackend and enableEnvoyPatchPolicy must be true"},
		{"misspelled Envoy Gateway setting", egHelmValuesFile, "    extensionApis:", "    extensionAPIs:", `unknown field "config.envoyGateway.extensionAPIs"`},
		{"bootstrap merge with a typo", "gateway/gateway.yaml", "        - tag_name: model", "        - tag_nme: model", `unknown field "tag_nme"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := readGatewayFiles(t)
			files[c.file] = []byte(mustReplace(t, string(files[c.file]), c.old, c.new))
			d, err := loadGateway(files)
			if err == nil {
				err = checkGateway(ec, d)
			}
			wantRejected(t, err, c.file, c.want)
		})
	}
}
