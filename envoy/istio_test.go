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
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
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
	helm       *istioGatewayValues // helm/gateway-values.yaml
	readme     string              // README.md, section "Istio"
}

// Files outside istio/*.yaml that the Istio deployment consists of too.
const (
	istioHelmValuesFile = "istio/helm/gateway-values.yaml"
	readmeFile          = "README.md"
	providerKeysSecret  = "aidialect-provider-keys"
)

// istioGatewayValues is the part of the istio/gateway chart's values that helm/gateway-values.yaml sets
// (chart values.yaml and values.schema.json: podAnnotations, envVarFrom); any other key is an error.
type istioGatewayValues struct {
	PodAnnotations map[string]string `json:"podAnnotations"`
	EnvVarFrom     []corev1.EnvVar   `json:"envVarFrom"`
}

// readIstioFiles: istio/*.yaml, the gateway's Helm values and the README, keyed by path.
func readIstioFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := readYAMLFiles(t, "istio")
	files[istioHelmValuesFile] = readFile(t, istioHelmValuesFile)
	files[readmeFile] = readFile(t, readmeFile)
	return files
}

// readmeSection returns the text of the "## <title>" section of a Markdown file.
func readmeSection(md, title string) string {
	start := strings.Index(md, "\n## "+title+"\n")
	if start < 0 {
		return ""
	}
	rest := md[start+1:]
	if end := strings.Index(rest[1:], "\n## "); end >= 0 {
		return rest[:end+1]
	}
	return rest
}

// shellCommands returns the commands in text that contain marker, with backslash-continued lines joined.
func shellCommands(text, marker string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if strings.Contains(line, marker) {
			out = append(out, line)
		}
	}
	return out
}

var namespaceFlag = regexp.MustCompile(`(?:^|\s)(?:-n|--namespace)[ =]([a-z0-9.-]+)`)

// secretNamespaces: the namespace of every `create secret generic aidialect-provider-keys` command in
// text ("" for a command without one, i.e. the current namespace).
func secretNamespaces(text string) []string {
	var out []string
	for _, cmd := range shellCommands(text, "create secret generic "+providerKeysSecret) {
		ns := ""
		if m := namespaceFlag.FindStringSubmatch(cmd); m != nil {
			ns = m[1]
		}
		out = append(out, ns)
	}
	return out
}

// checkSecretNamespace: every command in text that creates the key Secret creates it in want, the
// namespace of the pods that read it (a Secret elsewhere leaves them in CreateContainerConfigError).
func checkSecretNamespace(where, text, want, why string) error {
	nss := secretNamespaces(text)
	if len(nss) == 0 {
		return fmt.Errorf("%s: no `kubectl -n %s create secret generic %s` command", where, want, providerKeysSecret)
	}
	for _, ns := range nss {
		if ns != want {
			return fmt.Errorf("%s: Secret namespace %q, want %q: %s", where, ns, want, why)
		}
	}
	return nil
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
		switch file {
		case istioHelmValuesFile:
			docs.helm = &istioGatewayValues{}
			if err := decodeYAMLStrict(files[file], docs.helm); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
			}
			continue
		case readmeFile:
			docs.readme = readmeSection(string(files[file]), "Istio")
			continue
		}
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
			if se.GetLocation() != networkingv1alpha3.ServiceEntry_MESH_EXTERNAL ||
				len(ports) != 1 || ports[0].GetNumber() != 80 || ports[0].GetProtocol() != "HTTP" || ports[0].GetTargetPort() != 443 ||
				!reflect.DeepEqual(se.GetExportTo(), []string{"."}) {
				bad("ServiceEntry %s: want MESH_EXTERNAL, one HTTP port 80 -> targetPort 443, exportTo [.]", p.Host)
			}
			// DNS_ROUND_ROBIN becomes a LOGICAL_DNS cluster, as in envoy.yaml; DNS would be STRICT_DNS.
			if se.GetResolution() != networkingv1alpha3.ServiceEntry_DNS_ROUND_ROBIN {
				bad("ServiceEntry %s: resolution %v, want DNS_ROUND_ROBIN (LOGICAL_DNS; DNS gives STRICT_DNS)", p.Host, se.GetResolution())
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
		if cp := pls[0].GetConnectionPool(); true {
			opt := func(v int32) *uint64 {
				if v <= 0 { // istiod keeps its unbounded default for 0 (cluster_traffic_policy.go)
					return nil
				}
				n := uint64(v)
				return &n
			}
			if err := checkCircuitBreaker("DestinationRule "+p.Host+" connectionPool", map[string]*uint64{
				"tcp.maxConnections":           opt(cp.GetTcp().GetMaxConnections()),
				"http.http1MaxPendingRequests": opt(cp.GetHttp().GetHttp1MaxPendingRequests()),
				"http.http2MaxRequests":        opt(cp.GetHttp().GetHttp2MaxRequests()),
			}, "tcp.maxConnections", "http.http2MaxRequests", true); err != nil {
				errs = append(errs, err)
			}
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
		if docs.helm != nil && docs.helm.PodAnnotations["sidecar.istio.io/bootstrapOverride"] != cm.Name {
			bad("%s: podAnnotations sidecar.istio.io/bootstrapOverride must name the ConfigMap %s", istioHelmValuesFile, cm.Name)
		}
	}

	if docs.helm == nil {
		bad("%s: missing", istioHelmValuesFile)
	} else if err := checkIstioHelmValues(docs.helm, ec); err != nil {
		errs = append(errs, err)
	}
	// The gateway pods run in the Helm release's namespace, which is the namespace of every object here.
	if err := checkSecretNamespace("README.md (Istio)", docs.readme, namespace,
		"the istio/gateway release runs its pods in "+namespace+" and reads the Secret there"); err != nil {
		errs = append(errs, err)
	}
	for _, cmd := range shellCommands(docs.readme, "helm install aidialect-gateway istio/gateway") {
		if m := namespaceFlag.FindStringSubmatch(cmd); m == nil || m[1] != namespace || !strings.Contains(cmd, istioHelmValuesFile) {
			bad("README.md (Istio): `helm install aidialect-gateway` must use -n %s and -f envoy/%s", namespace, istioHelmValuesFile)
		}
	}
	return errors.Join(errs...)
}

// checkIstioHelmValues: the keys reach the istio-proxy container from the Secret, through the chart
// (envVarFrom), never inline; the stats matcher keeps the filter's metrics.
func checkIstioHelmValues(v *istioGatewayValues, ec *envoyConfig) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(istioHelmValuesFile+": "+format, args...))
	}
	var names []string
	for _, e := range v.EnvVarFrom {
		ref := (*corev1.SecretKeySelector)(nil)
		if e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
		if e.Value != "" || ref == nil || ref.Name != providerKeysSecret || ref.Key != e.Name {
			bad("envVarFrom %s must come from secretKeyRef {name: %s, key: %s}, never inline", e.Name, providerKeysSecret, e.Name)
		}
		names = append(names, e.Name)
	}
	if names = sortedCopy(names); !reflect.DeepEqual(names, envKeys(ec.plugin)) {
		bad("envVarFrom %v, want the api_key_env values %v", names, envKeys(ec.plugin))
	}
	var pc struct {
		ProxyStatsMatcher struct {
			InclusionRegexps []string `json:"inclusionRegexps"`
		} `json:"proxyStatsMatcher"`
	}
	if err := decodeYAMLStrict([]byte(v.PodAnnotations["proxy.istio.io/config"]), &pc); err != nil {
		bad("podAnnotations proxy.istio.io/config: %v", err)
	}
	// Istio keeps a stat when a regex matches its whole name (with or without Envoy's wasmcustom. prefix).
	for _, stat := range []string{"wasmcustom.aidialect_requests_total.client_dialect.openai", "aidialect_requests_total"} {
		kept := false
		for _, re := range pc.ProxyStatsMatcher.InclusionRegexps {
			if m, err := regexp.MatchString("^(?:"+re+")$", stat); err == nil && m {
				kept = true
			}
		}
		if !kept {
			bad("podAnnotations proxy.istio.io/config: proxyStatsMatcher.inclusionRegexps must keep %s", stat)
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
	// The filter (patches 1 and 2) only on proxies of the minimum Istio or newer: an older proxy gets
	// no filter and answers 404, instead of a filter without the flag that hangs.
	floorRegex := ""
	for _, applyTo := range []networkingv1alpha3.EnvoyFilter_ApplyTo{networkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG, networkingv1alpha3.EnvoyFilter_HTTP_FILTER} {
		p := patches[applyTo]
		if p == nil {
			continue
		}
		if err := checkProxyFloor(p.GetMatch().GetProxy().GetProxyVersion()); err != nil {
			bad("%v patch: %v", applyTo, err)
		}
		if v := p.GetMatch().GetProxy().GetProxyVersion(); floorRegex == "" {
			floorRegex = v
		} else if v != floorRegex {
			bad("EXTENSION_CONFIG and HTTP_FILTER must match the same proxyVersion (else a proxy gets a filter whose config never comes)")
		}
	}
	if len(ef.GetConfigPatches()) != 4 {
		bad("want 4 patches (EXTENSION_CONFIG, HTTP_FILTER, NETWORK_FILTER, LISTENER), got %d", len(ef.GetConfigPatches()))
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

	// 2. The HTTP filter referring to it over ECDS, where UNSPECIFIED_PHASE would put a WasmPlugin: istiod
	// appends those right before grpc_stats on a gateway (pilot/pkg/networking/core/listener_builder.go).
	if p := patches[networkingv1alpha3.EnvoyFilter_HTTP_FILTER]; p == nil {
		bad("needs an HTTP_FILTER patch inserting the filter")
	} else {
		fc := p.GetMatch().GetListener().GetFilterChain().GetFilter()
		if p.GetPatch().GetOperation() != networkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE ||
			fc.GetName() != "envoy.filters.network.http_connection_manager" || fc.GetSubFilter().GetName() != "envoy.filters.http.grpc_stats" {
			bad("HTTP_FILTER patch must INSERT_BEFORE envoy.filters.http.grpc_stats in the HTTP connection manager (where UNSPECIFIED_PHASE plugins go)")
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
			// istiod sets stream_idle_timeout 0 (off) and the routes have timeout 0s: without this a silent
			// provider holds the stream forever.
			if err := checkIdleTimeout("stream_idle_timeout (istiod sets 0)", hcm.GetStreamIdleTimeout()); err != nil {
				bad("NETWORK_FILTER value: %v", err)
			}
		}
	}

	// 4. The gateway listener's buffer limit, above max_request_bytes (istiod leaves Envoy's 1 MiB).
	if p := patches[networkingv1alpha3.EnvoyFilter_LISTENER]; p == nil || p.GetPatch().GetOperation() != networkingv1alpha3.EnvoyFilter_Patch_MERGE {
		bad("needs a LISTENER MERGE patch raising per_connection_buffer_limit_bytes (istiod leaves Envoy's 1 MiB default)")
	} else {
		var l listenerv3.Listener
		if err := structToProto(p.GetPatch().GetValue(), &l); err != nil {
			bad("LISTENER value: %v", err)
		} else if got := l.GetPerConnectionBufferLimitBytes().GetValue(); got < bufferLimitBytes || int64(got) <= *ec.plugin.MaxRequestBytes {
			bad("LISTENER value: per_connection_buffer_limit_bytes is %d, want >= %d and > max_request_bytes (%d)", got, bufferLimitBytes, *ec.plugin.MaxRequestBytes)
		}
		if port := p.GetMatch().GetListener().GetPortNumber(); port != 80 {
			bad("LISTENER patch must match the gateway's port 80 (portNumber %d)", port)
		}
	}
	return errors.Join(errs...)
}

// checkProxyFloor: a proxyVersion regex (matched against the proxy's ISTIO_VERSION) that admits Istio
// 1.28 and newer and nothing older.
func checkProxyFloor(re string) error {
	if re == "" {
		return errors.New("match.proxy.proxyVersion must admit only Istio >= 1.28 (istiod 1.27 drops allow_on_headers_stop_iteration)")
	}
	rx, err := regexp.Compile(re)
	if err != nil {
		return fmt.Errorf("proxyVersion: %w", err)
	}
	for _, v := range []string{"1.28.0", "1.28.10", "1.29.3", "1.30.0-distroless", "1.35.1", "2.0.0"} {
		if !rx.MatchString(v) {
			return fmt.Errorf("proxyVersion %q rejects supported proxy version %s", re, v)
		}
	}
	for _, v := range []string{"1.27.9", "1.27.0", "1.26.3", "1.2.8", "1.9.0", "1.8.6", "0.28.0"} {
		if rx.MatchString(v) {
			return fmt.Errorf("proxyVersion %q admits %s, older than the minimum Istio 1.28", re, v)
		}
	}
	return nil
}

// checkIdleTimeout: an idle timeout (field names it) is set, finite and not shorter than a reasoning
// model's silence. 0 turns it off, and then a provider that goes silent holds its stream forever.
func checkIdleTimeout(field string, d *durationpb.Duration) error {
	const minIdle, maxIdle = 300 * time.Second, time.Hour
	if d == nil || d.AsDuration() == 0 {
		return fmt.Errorf("%s is missing or 0 (= off): a silent provider stream would never end; set it (900s)", field)
	}
	if got := d.AsDuration(); got < minIdle || got > maxIdle {
		return fmt.Errorf("%s is %v, want %v..%v", field, got, minIdle, maxIdle)
	}
	return nil
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
	docs, err := loadIstio(readIstioFiles(t))
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
		{"proxy floor admits Istio 1.27", "istio/envoyfilter.yaml", "      proxy:\n        proxyVersion: '^(1\\.(2[89]|[3-9][0-9])|[2-9][0-9]*)\\..*'\n      listener:",
			"      proxy:\n        proxyVersion: '^(1\\.(2[7-9]|[3-9][0-9])|[2-9][0-9]*)\\..*'\n      listener:", "admits 1.27.9, older than the minimum Istio 1.28"},
		{"filter for every proxy version", "istio/envoyfilter.yaml", "      proxy:\n        proxyVersion: '^(1\\.(2[89]|[3-9][0-9])|[2-9][0-9]*)\\..*'\n      listener:",
			"      listener:", "HTTP_FILTER patch: match.proxy.proxyVersion must admit only Istio >= 1.28"},
		{"buffer limit below max_request_bytes", "istio/envoyfilter.yaml", "        per_connection_buffer_limit_bytes: 16777216",
			"        per_connection_buffer_limit_bytes: 4194304", "LISTENER value: per_connection_buffer_limit_bytes is 4194304"},
		{"no listener buffer patch", "istio/envoyfilter.yaml", "  - applyTo: LISTENER\n", "  - applyTo: CLUSTER\n",
			"needs a LISTENER MERGE patch raising per_connection_buffer_limit_bytes"},
		{"missing stream idle timeout", "istio/envoyfilter.yaml", "          stream_idle_timeout: 900s\n", "",
			"stream_idle_timeout (istiod sets 0) is missing or 0"},
		{"filter inserted at the wrong point", "istio/envoyfilter.yaml", "              name: envoy.filters.http.grpc_stats",
			"              name: envoy.filters.http.fault", "must INSERT_BEFORE envoy.filters.http.grpc_stats"},
		{"unbounded circuit breakers", "istio/serviceentries.yaml",
			"        subjectAltNames: [api.eternalai.org]\n      connectionPool:\n        tcp:\n          maxConnections: 8192\n        http:\n          http1MaxPendingRequests: 8192\n          http2MaxRequests: 8192\n",
			"        subjectAltNames: [api.eternalai.org]\n",
			"DestinationRule api.eternalai.org connectionPool: http.http1MaxPendingRequests is not set"},
		{"circuit breaker above the bound", "istio/serviceentries.yaml",
			"        subjectAltNames: [api.openai.com]\n      connectionPool:\n        tcp:\n          maxConnections: 8192\n        http:\n          http1MaxPendingRequests: 8192\n          http2MaxRequests: 8192\n",
			"        subjectAltNames: [api.openai.com]\n      connectionPool:\n        tcp:\n          maxConnections: 8192\n        http:\n          http1MaxPendingRequests: 8192\n          http2MaxRequests: 100000000\n",
			"http.http2MaxRequests is 100000000, unbounded in effect"},
		{"STRICT_DNS resolution", "istio/serviceentries.yaml", "  hosts: [api.openai.com]\n  location: MESH_EXTERNAL\n  resolution: DNS_ROUND_ROBIN",
			"  hosts: [api.openai.com]\n  location: MESH_EXTERNAL\n  resolution: DNS", "resolution DNS, want DNS_ROUND_ROBIN"},
		{"Secret namespace", readmeFile, "kubectl -n aidialect create secret generic aidialect-provider-keys",
			"kubectl -n istio-system create secret generic aidialect-provider-keys", `README.md (Istio): Secret namespace "istio-system", want "aidialect"`},
		{"key missing from the gateway's envVarFrom", istioHelmValuesFile,
			"- name: ETERNALAI_KEY\n  valueFrom:\n    secretKeyRef: { name: aidialect-provider-keys, key: ETERNALAI_KEY }\n", "",
			"envVarFrom [AZURE_AI_KEY AZURE_OPENAI_KEY OPENAI_API_KEY], want the api_key_env values"},
		{"inline key in the gateway values", istioHelmValuesFile,
			"- name: AZURE_AI_KEY\n  valueFrom:\n    secretKeyRef: { name: aidialect-provider-keys, key: AZURE_AI_KEY }\n",
			"- name: AZURE_AI_KEY\n  value: sk-123\n", "envVarFrom AZURE_AI_KEY must come from secretKeyRef"},
		{"misspelled chart value", istioHelmValuesFile, "envVarFrom:\n", "envVarsFrom:\n", `unknown field "envVarsFrom"`},
		{"stats matcher drops the metrics", istioHelmValuesFile, `inclusionRegexps: ["(wasmcustom\\.)?aidialect_.*"]`,
			`inclusionRegexps: ["aidialect_.*"]`, "must keep wasmcustom.aidialect_requests_total"},
		{"stats tag drift", "istio/bootstrap-override.yaml", `(\\.code\\.([^.]+))`, `(\\.error\\.([^.]+))`,
			"must hold exactly the stats_config.stats_tags of envoy.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := readIstioFiles(t)
			files[c.file] = []byte(mustReplace(t, string(files[c.file]), c.old, c.new))
			docs, err := loadIstio(files)
			if err == nil {
				err = checkIstio(ec, docs)
			}
			wantRejected(t, err, c.file, c.want)
		})
	}
}
