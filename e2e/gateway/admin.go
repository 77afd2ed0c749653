package gateway

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// StatsTags are envoy/envoy.yaml's stats_config.stats_tags, as the admin page applies them (a test keeps
// them equal to the file's).
var StatsTags = []struct{ Name, Regex string }{
	{"client_dialect", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.client_dialect\.([^.]+))`},
	{"provider", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.provider\.([^.]+))`},
	{"status_class", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.status_class\.([^.]+))`},
	{"model", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.model\.([^.]+))`},
	{"code", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.code\.([^.]+))`},
	{"result", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.result\.([^.]+))`},
	{"reason", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.reason\.([^.]+))`},
	{"change", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.change\.([^.]+))`},
	{"from", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.from\.([^.]+))`},
	{"to", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.to\.([^.]+))`},
	{"consumer", `^wasmcustom\.aidialect_[^.]*(?:\.[^.]+\.[^.]+)*?(\.consumer\.([^.]+))`},
	{"gen_ai.operation.name", `^wasmcustom\.gen_ai_[^.]*(?:\.[^.]+\.[^.]+)*?(\.gen_ai_operation_name\.([^.]+))`},
	{"gen_ai.request.model", `^wasmcustom\.gen_ai_[^.]*(?:\.[^.]+\.[^.]+)*?(\.gen_ai_request_model\.([^.]+))`},
	{"gen_ai.token.type", `^wasmcustom\.gen_ai_[^.]*(?:\.[^.]+\.[^.]+)*?(\.gen_ai_token_type\.([^.]+))`},
	{"gen_ai.provider.name", `^wasmcustom\.gen_ai_[^.]*(?:\.[^.]+\.[^.]+)*?(\.gen_ai_provider_name\.(openai|azure\.ai\.openai|azure\.ai\.inference|eternalai))$`},
}

var statsTagRegexps = func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(StatsTags))
	for i, t := range StatsTags {
		out[i] = regexp.MustCompile(t.Regex)
	}
	return out
}()

// AdminHandler serves what Envoy's admin serves of the filter's metrics: /stats/prometheus, each metric
// named as Envoy's Prometheus output names a Wasm metric (Envoy keeps it as "wasmcustom.<name>", extracts
// the stats_tags, and leaves the custom namespace out of the exported name).
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/stats/prometheus", func(w http.ResponseWriter, r *http.Request) {
		metrics, err := g.current().Metrics()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("content-type", "text/plain; version=0.0.4")
		w.Write(PrometheusText(metrics))
	})
	return mux
}

// PrometheusText renders metrics in Prometheus' text format as Envoy's admin does.
func PrometheusText(metrics []hostemu.Metric) []byte {
	type series struct {
		labels string
		m      hostemu.Metric
	}
	families := map[string][]series{}
	kinds := map[string]hostemu.MetricKind{}
	for _, m := range metrics {
		name, tags := extractTags("wasmcustom." + m.Name)
		name = promName(strings.TrimPrefix(name, "wasmcustom."))
		families[name] = append(families[name], series{promLabels(tags), m})
		kinds[name] = m.Kind
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		list := families[name]
		sort.Slice(list, func(i, j int) bool { return list[i].labels < list[j].labels })
		switch kinds[name] {
		case hostemu.Counter:
			fmt.Fprintf(&b, "# TYPE %s counter\n", name)
		case hostemu.Gauge:
			fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		default:
			fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		}
		for _, s := range list {
			if s.m.Kind != hostemu.Histogram {
				fmt.Fprintf(&b, "%s%s %d\n", name, braces(s.labels), s.m.Value)
				continue
			}
			for i, bound := range hostemu.HistogramBounds {
				fmt.Fprintf(&b, "%s_bucket%s %d\n", name, braces(join(s.labels, `le="`+strconv.FormatFloat(bound, 'f', -1, 64)+`"`)), s.m.Buckets[i])
			}
			fmt.Fprintf(&b, "%s_bucket%s %d\n", name, braces(join(s.labels, `le="+Inf"`)), s.m.Count)
			fmt.Fprintf(&b, "%s_sum%s %d\n", name, braces(s.labels), s.m.Sum)
			fmt.Fprintf(&b, "%s_count%s %d\n", name, braces(s.labels), s.m.Count)
		}
	}
	return []byte(b.String())
}

// extractTags applies StatsTags as Envoy's regex tag extractors do: each searches the full name; its first
// group is removed from the name, its second (or first) is the value.
func extractTags(name string) (string, map[string]string) {
	tags := map[string]string{}
	remove := make([]bool, len(name))
	for i, re := range statsTagRegexps {
		loc := re.FindStringSubmatchIndex(name)
		if loc == nil || loc[2] < 0 {
			continue
		}
		value := name[loc[2]:loc[3]]
		if re.NumSubexp() >= 2 && loc[4] >= 0 {
			value = name[loc[4]:loc[5]]
		}
		tags[StatsTags[i].Name] = value
		for k := loc[2]; k < loc[3]; k++ {
			remove[k] = true
		}
	}
	var b strings.Builder
	for i := range name {
		if !remove[i] {
			b.WriteByte(name[i])
		}
	}
	return b.String(), tags
}

// promName is a name as Envoy's Prometheus output sanitizes it: every character outside [a-zA-Z0-9_]
// becomes '_'.
func promName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func promLabels(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(tags[k])
		parts = append(parts, promName(k)+`="`+v+`"`)
	}
	return strings.Join(parts, ",")
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func braces(s string) string {
	if s == "" {
		return ""
	}
	return "{" + s + "}"
}
