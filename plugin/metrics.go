package main

import (
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/aidialect/aidialect/internal/health"
	"github.com/aidialect/aidialect/translate"
)

// Metric names carry their labels as ".label.value" pairs; Envoy's stats_tags (envoy/envoy.yaml) extract them.
// Every name is defined in OnPluginStart from the configuration, so the set is bounded whatever clients send.
const (
	metricRequests         = "aidialect_requests_total"
	metricPromptTokens     = "aidialect_prompt_tokens_total"
	metricCompletionTokens = "aidialect_completion_tokens_total"
	metricFilterErrors     = "aidialect_filter_errors_total"
	// metricBudgetChecks counts admissions by result (ok, over_limit, service_failed) and failed charges
	// (charge_failed); metricBudgetCharged the tokens charged after answers, beyond their reservations.
	metricBudgetChecks  = "aidialect_budget_checks_total"
	metricBudgetCharged = "aidialect_budget_charged_tokens_total"
	// metricBudgetTokens counts, per consumer, the tokens its exchanges cost its budget (the larger of the
	// reservation and the reported usage), so a team's spending shows without reading the service's Redis.
	metricBudgetTokens = "aidialect_budget_tokens_total"
)

// budgetResults are metricBudgetChecks' result labels.
var budgetResults = []string{"ok", "over_limit", "service_failed", "charge_failed"}

// Error codes counted besides translate's own.
const (
	codePanic             = "panic"
	codeUpstreamEncoded   = "upstream_content_encoding"
	codeUpstreamBadJSON   = "upstream_invalid_json"
	codeStreamEventTooBig = "stream_event_too_large"
	codeUpstreamStreamCut = "upstream_stream_cut"
	// codeStreamEndLost: a stream ended in trailers with its end still to write (the [DONE], an error event,
	// a bridged stream's end, a last event without its blank line), which Envoy no longer lets the filter add.
	codeStreamEndLost = "stream_end_lost_in_trailers"
)

var countedCodes = []string{
	codePanic, codeUpstreamEncoded, codeUpstreamBadJSON, codeStreamEventTooBig, codeUpstreamStreamCut, codeStreamEndLost,
	string(translate.ErrModelNotFound), string(translate.ErrModelNotAllowed), string(translate.ErrUnauthorized),
	string(translate.ErrInvalidAPIVersion), string(translate.ErrInvalidDeployment), string(translate.ErrInvalidJSON),
	string(translate.ErrInvalidParameter), string(translate.ErrExtraParametersNotAllowed), string(translate.ErrBodyTooLarge),
	string(translate.ErrUnsupportedOperation), string(translate.ErrUnsupportedEncoding), string(translate.ErrUnknownPath),
	string(translate.ErrMethodNotAllowed), string(translate.ErrInternal), string(translate.ErrUpstreamRedirect),
	string(translate.ErrBodyNeverArrived), string(translate.ErrUnsupportedParameter), string(translate.ErrUpstreamEarlyAnswer),
	string(translate.ErrPreviousResponseNotFound), string(translate.ErrProvidersThrottled),
	string(translate.ErrProvidersUnavailable), string(translate.ErrUpstreamUnreachable),
	string(translate.ErrBudgetExceeded), string(translate.ErrBudgetUnavailable),
}

var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// noProvider is the provider label of requests answered before one was chosen.
const noProvider = "none"

type metrics struct {
	// requests[dialect][provider index, or len(providers) for none][status class]
	requests         [translate.DialectLimit][][len(statusClasses)]proxywasm.MetricCounter
	promptTokens     []proxywasm.MetricCounter // by modelRoute.metricID
	completionTokens []proxywasm.MetricCounter
	errors           map[string]proxywasm.MetricCounter
	attempts         []proxywasm.MetricCounter          // by provider index
	budgetChecks     map[string]proxywasm.MetricCounter // by result; nil without budgets
	budgetCharged    proxywasm.MetricCounter
	budgetTokens     map[string]proxywasm.MetricCounter // by consumer name, with budgets
	genAISeries      []*genAISeries                     // by model entry and operation, defined when first recorded (genai_metrics.go)
	defined          map[string]proxywasm.MetricCounter // counters defined on first use
	// names keeps every defined name alive. Envoy copies a name when it is defined; the SDK's proxytest host
	// (the plugin tests, the local gateway) keeps a view into the guest's memory instead, which a collection
	// would free and reuse, corrupting its metric table.
	names []string
}

func (m *metrics) counter(name string) proxywasm.MetricCounter {
	m.names = append(m.names, name)
	return proxywasm.DefineCounterMetric(name)
}

// defineMetrics defines every metric the configuration can produce.
func defineMetrics(c *config) *metrics {
	m := &metrics{errors: map[string]proxywasm.MetricCounter{}}
	providerLabels := make([]string, 0, len(c.providers)+1)
	for _, p := range c.providers {
		providerLabels = append(providerLabels, p.name)
	}
	providerLabels = append(providerLabels, noProvider)
	for _, d := range translate.Dialects {
		m.requests[d] = make([][len(statusClasses)]proxywasm.MetricCounter, len(providerLabels))
		for pi, p := range providerLabels {
			for ci, class := range statusClasses {
				m.requests[d][pi][ci] = m.counter(metricRequests + ".client_dialect." + d.String() +
					".provider." + p + ".status_class." + class)
			}
		}
	}
	for _, t := range c.metricTargets {
		suffix := ".provider." + t.provider + ".model." + t.label
		m.promptTokens = append(m.promptTokens, m.counter(metricPromptTokens+suffix))
		m.completionTokens = append(m.completionTokens, m.counter(metricCompletionTokens+suffix))
	}
	for _, code := range countedCodes {
		m.errors[code] = m.counter(metricFilterErrors + ".code." + code)
	}
	for _, p := range c.providers {
		m.attempts = append(m.attempts, m.counter(metricAttempts+".provider."+p.name))
	}
	if c.budgets.on {
		m.budgetChecks = map[string]proxywasm.MetricCounter{}
		for _, r := range budgetResults {
			m.budgetChecks[r] = m.counter(metricBudgetChecks + ".result." + r)
		}
		m.budgetCharged = m.counter(metricBudgetCharged)
		m.budgetTokens = map[string]proxywasm.MetricCounter{}
		names := []string{anonymousConsumer}
		if len(c.consumers) > 0 {
			names = names[:0]
			for _, cons := range c.consumers {
				names = append(names, cons.name)
			}
		}
		for _, name := range names {
			m.budgetTokens[name] = m.counter(metricBudgetTokens + ".consumer." + metricLabel(name))
		}
	}
	return m
}

func (m *metrics) countBudget(result string) {
	if m == nil {
		return
	}
	if c, ok := m.budgetChecks[result]; ok {
		c.Increment(1)
	}
}

// countBudgetTokens counts what an exchange cost its consumer's budget.
func (m *metrics) countBudgetTokens(consumer string, tokens int64) {
	if m == nil || tokens <= 0 {
		return
	}
	if c, ok := m.budgetTokens[consumer]; ok {
		c.Increment(uint64(tokens))
	}
}

func (m *metrics) countCharged(tokens int64) {
	if m == nil || m.budgetChecks == nil || tokens <= 0 {
		return
	}
	m.budgetCharged.Increment(uint64(tokens))
}

func (m *metrics) countRequest(client translate.Dialect, providerIndex, status int) {
	if m == nil || client == translate.DialectUnknown || int(client) >= len(m.requests) {
		return
	}
	byProvider := m.requests[client]
	if providerIndex < 0 || providerIndex >= len(byProvider) {
		providerIndex = len(byProvider) - 1
	}
	class := status/100 - 1
	if class < 0 || class >= len(statusClasses) {
		class = len(statusClasses) - 1
	}
	byProvider[providerIndex][class].Increment(1)
}

func (m *metrics) countError(code string) {
	if m == nil {
		return
	}
	if c, ok := m.errors[code]; ok {
		c.Increment(1)
	}
}

func (m *metrics) countTokens(metricID int, u translate.Usage) {
	if m == nil || !u.Seen || metricID < 0 || metricID >= len(m.promptTokens) {
		return
	}
	if u.PromptTokens > 0 {
		m.promptTokens[metricID].Increment(uint64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		m.completionTokens[metricID].Increment(uint64(u.CompletionTokens))
	}
}

// metricLabel makes a configured name safe inside a dotted metric name: '.' would split it into two labels
// and '*' is not a Prometheus name character.
func metricLabel(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '*':
			b.WriteString("any")
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Failover metrics (failover.go). Their names carry provider names and a bounded set of reasons; they are
// defined when first counted (a provider pair that never fails over defines nothing), each once per VM.
const (
	metricAttempts  = "aidialect_attempts_total"
	metricFailovers = "aidialect_failovers_total"
	metricSkips     = "aidialect_skipped_total"
	metricBenches   = "aidialect_benched_total"
	metricCircuits  = "aidialect_circuit_changes_total"
)

// lazy is a counter defined on first use.
func (m *metrics) lazy(name string) proxywasm.MetricCounter {
	if c, ok := m.defined[name]; ok {
		return c
	}
	if m.defined == nil {
		m.defined = map[string]proxywasm.MetricCounter{}
	}
	c := m.counter(name)
	m.defined[name] = c
	return c
}

// countAttempt counts an attempt toward a provider (aidialect_attempts_total.provider.P).
func (m *metrics) countAttempt(provider int) {
	if m != nil && provider >= 0 && provider < len(m.attempts) {
		m.attempts[provider].Increment(1)
	}
}

// countFailover counts a failover from one provider to another (path "A.to.B") or an event of one provider,
// by reason (aidialect_failovers_total.from.A.to.B.reason.R).
func (m *metrics) countFailover(path, reason string) {
	if m != nil {
		m.lazy(metricFailovers + ".from." + path + ".reason." + reason).Increment(1)
	}
}

// countSkip counts a request that skipped a benched provider (aidialect_skipped_total.provider.P.reason.R).
func (m *metrics) countSkip(provider string, r health.Reason) {
	if m != nil {
		m.lazy(metricSkips + ".provider." + provider + ".reason." + r.String()).Increment(1)
	}
}

// countBench counts a provider or key benched (aidialect_benched_total.provider.P.reason.R).
func (m *metrics) countBench(provider string, f health.Failure) {
	if m == nil {
		return
	}
	reason := "rate_limited"
	if f == health.Rejected {
		reason = "key_rejected"
	}
	m.lazy(metricBenches + ".provider." + provider + ".reason." + reason).Increment(1)
}

// countCircuit counts a circuit opening or closing (aidialect_circuit_changes_total.provider.P.change.C).
func (m *metrics) countCircuit(provider, change string) {
	if m != nil {
		m.lazy(metricCircuits + ".provider." + provider + ".change." + change).Increment(1)
	}
}
