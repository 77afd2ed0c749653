package main

import (
	"strconv"
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/translate"
)

// Token budgets per consumer (and per consumer and model), kept by Envoy's global rate-limit service
// (github.com/envoyproxy/ratelimit, its counters in Redis) so that every replica of the gateway shares them.
// The filter sends descriptors; the limits live in the service's configuration (`check-config
// -ratelimit-config` prints a starting file). The Go SDK has no gRPC calls, so the filter speaks the
// service's JSON HTTP API (POST /json) by callouts to its cluster:
//
//   - Admission, before a request goes upstream: the request is held while the service adds an estimate of
//     the prompt's tokens to each window (translate.EstimatePromptTokens, low by design: the service cannot
//     refund) and answers whether every window is still within its limit. Over: 429 budget_exceeded in the
//     client's dialect, with Retry-After when the window resets, and the provider is not called.
//   - Charge, once the answer's usage is known: the rest (reported usage minus the reservation) is queued per
//     worker and sent in one callout per tick from the root context, whose callouts outlive any stream
//     (docs/envoy-host.md section 9). A charge that fails is kept and sent again with the next one.
//
// The service unreachable, slow (budgets.timeout_ms) or answering garbage: the request goes on
// (on_service_failure "allow", the default), counted and logged at most once a minute, or is refused with
// 503 budget_unavailable ("deny"). Descriptors come only from the configuration and the authenticated
// consumer: nothing a client sends is read into them.

type rawBudgets struct {
	Cluster, Authority, Domain, OnServiceFailure string
	Per                                          []string
	TimeoutMs, FlushMs                           *int
	Reserve                                      *bool
}

func decodeBudgets(field string, v gjson.Result, b *rawBudgets) error {
	return decodeObject(field, v, func(key, path string, v gjson.Result) error {
		switch key {
		case "cluster":
			return decodeString(path, v, &b.Cluster)
		case "authority":
			return decodeString(path, v, &b.Authority)
		case "domain":
			return decodeString(path, v, &b.Domain)
		case "on_service_failure":
			return decodeString(path, v, &b.OnServiceFailure)
		case "per":
			b.Per = []string{}
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				var s string
				err := decodeString(item, v, &s)
				b.Per = append(b.Per, s)
				return err
			})
		case "timeout_ms":
			return decodeInt(path, v, &b.TimeoutMs)
		case "flush_ms":
			return decodeInt(path, v, &b.FlushMs)
		case "reserve":
			var r bool
			err := decodeBool(path, v, &r)
			b.Reserve = &r
			return err
		}
		return unknownKey(path)
	})
}

// budgetConfig is the parsed "budgets" object; on is false when the configuration has none.
type budgetConfig struct {
	on                         bool
	cluster, authority, domain string
	perConsumer, perModel      bool
	timeoutMs                  uint32
	flushMs                    int
	failClosed                 bool
	reserve                    bool
	// request is the callouts' header list, built once (the SDK only reads it).
	request [][2]string
}

// Descriptor keys, as the rate-limit service's configuration names them.
const (
	descriptorConsumer = "consumer"
	descriptorModel    = "model"
	// anonymousConsumer is the consumer descriptor's value when the gateway has no consumers: every request
	// then shares one budget. Never the client's key (passthrough): it would become a Redis key.
	anonymousConsumer = "anonymous"
)

func parseBudgets(raw *rawBudgets) (budgetConfig, error) {
	if raw == nil {
		return budgetConfig{}, nil
	}
	b := budgetConfig{on: true, cluster: "ratelimit", domain: "aidialect", perConsumer: true, timeoutMs: 100,
		flushMs: 250, reserve: true}
	if raw.Cluster != "" {
		b.cluster = raw.Cluster
	}
	b.authority = b.cluster
	if raw.Authority != "" {
		b.authority = raw.Authority
	}
	// In order: the authority defaults to the cluster, whose error is the one to report.
	for _, f := range [...]struct{ field, value string }{{"budgets.cluster", b.cluster}, {"budgets.authority", b.authority}} {
		if !isToken(f.value) && !validHost(f.value) {
			return b, fieldErr(f.field, "%q is not an Envoy cluster name or host", f.value)
		}
	}
	if raw.Domain != "" {
		b.domain = raw.Domain
	}
	if !isToken(b.domain) {
		return b, fieldErr("budgets.domain", "%q must be the rate-limit service's domain: letters, digits, '-', '_', '.'", b.domain)
	}
	if raw.Per != nil {
		b.perConsumer = false
		for i, per := range raw.Per {
			switch per {
			case "consumer":
				b.perConsumer = true
			case "consumer_model":
				b.perModel = true
			default:
				return b, fieldErr("budgets.per["+strconv.Itoa(i)+"]", "%q is not one of consumer (one budget per consumer), consumer_model (one per consumer and model)", per)
			}
		}
		if !b.perConsumer && !b.perModel {
			return b, fieldErr("budgets.per", "names no budget: list consumer, consumer_model or both")
		}
	}
	if raw.TimeoutMs != nil {
		if *raw.TimeoutMs < 1 || *raw.TimeoutMs > 10_000 {
			return b, fieldErr("budgets.timeout_ms", "must be between 1 and 10000 ms: how long a request waits for the rate-limit service before on_service_failure applies")
		}
		b.timeoutMs = uint32(*raw.TimeoutMs)
	}
	if raw.FlushMs != nil {
		if *raw.FlushMs < 50 || *raw.FlushMs > 10_000 {
			return b, fieldErr("budgets.flush_ms", "must be between 50 and 10000 ms: how often a worker sends the charges it collected")
		}
		b.flushMs = *raw.FlushMs
	}
	switch raw.OnServiceFailure {
	case "", "allow":
	case "deny":
		b.failClosed = true
	default:
		return b, fieldErr("budgets.on_service_failure", "%q is not one of allow (the default: requests go on while the rate-limit service is unreachable), deny (they get 503 budget_unavailable)", raw.OnServiceFailure)
	}
	if raw.Reserve != nil {
		b.reserve = *raw.Reserve
	}
	return b, nil
}

// validHost accepts a DNS name or address with an optional port, for budgets.authority.
func validHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '_') {
			return false
		}
	}
	return true
}

// budgetState is a request's budget check.
type budgetState struct {
	pending  bool   // the admission callout is under way; the request is held
	checked  bool   // admitted (by the service, or by on_service_failure allow): charge at the end
	reserved int64  // tokens the admission added
	used     int64  // tokens the answer's usage reported
	consumer string // descriptor values
	model    string
}

// budgetConsumer is the consumer descriptor's value.
func (h *httpContext) budgetConsumer() string {
	if h.consumer != nil {
		return h.consumer.name
	}
	return anonymousConsumer
}

// appendDescriptors writes an admission's descriptors (the consumer's, and the consumer and model's, as
// budgets.per asks), each adding hits (0: check only).
func appendDescriptors(b []byte, cfg *budgetConfig, consumer, model string, hits int64) []byte {
	if cfg.perConsumer {
		b = appendDescriptor(b, consumer, "", hits)
	}
	if cfg.perModel {
		if cfg.perConsumer {
			b = append(b, ',')
		}
		b = appendDescriptor(b, consumer, model, hits)
	}
	return b
}

// appendDescriptor writes one descriptor: the consumer's, or with a model the consumer and model's.
func appendDescriptor(b []byte, consumer, model string, hits int64) []byte {
	b = append(b, `{"entries":[{"key":"`+descriptorConsumer+`","value":`...)
	b = jsonscan.AppendString(b, consumer)
	if model != "" {
		b = append(b, `},{"key":"`+descriptorModel+`","value":`...)
		b = jsonscan.AppendString(b, model)
	}
	b = append(b, `}],"hits_addend":`...)
	b = strconv.AppendInt(b, hits, 10)
	return append(b, '}')
}

// rateLimitBody is a POST /json body of the configuration's domain with the descriptors appendTo writes.
func (c *budgetConfig) rateLimitBody(appendTo func([]byte) []byte) []byte {
	b := append(make([]byte, 0, 256), `{"domain":`...)
	b = jsonscan.AppendString(b, c.domain)
	b = append(b, `,"descriptors":[`...)
	b = appendTo(b)
	return append(b, "]}"...)
}

// rateLimitRequest is the header list of a POST /json request to the rate-limit service.
func (c *budgetConfig) rateLimitRequest() [][2]string {
	if c.request == nil {
		c.request = [][2]string{{":method", "POST"}, {":path", "/json"}, {":authority", c.authority},
			{"content-type", "application/json"}}
	}
	return c.request
}

// checkBudget holds the request (its headers and body are ready to go) while the rate-limit service admits
// it. It returns the action for the request callback.
func (h *httpContext) checkBudget() types.Action {
	cfg := &h.cfg.budgets
	bs := &h.budget
	bs.consumer, bs.model = h.budgetConsumer(), h.up.route.label
	if cfg.reserve {
		bs.reserved = int64(translate.EstimatePromptTokens(h.rawBody))
	}
	body := cfg.rateLimitBody(func(b []byte) []byte { return appendDescriptors(b, cfg, bs.consumer, bs.model, bs.reserved) })
	if _, err := proxywasm.DispatchHttpCall(cfg.cluster, cfg.rateLimitRequest(), body, nil, cfg.timeoutMs, h.onBudgetAnswer); err != nil {
		h.plugin.logBudgetFailure("Envoy refused a callout to cluster " + strconv.Quote(cfg.cluster) + " (" + err.Error() + "): add the cluster of the rate-limit service, or set budgets.cluster")
		return h.budgetServiceFailed()
	}
	bs.pending = true
	return types.ActionPause
}

// onBudgetAnswer is the rate-limit service's answer to an admission (numHeaders 0: no answer in time).
func (h *httpContext) onBudgetAnswer(numHeaders, bodySize, _ int) {
	h.budget.pending = false
	if h.streamGone || h.answer == answerLocal {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogErrorf("aidialect: panic while handling the rate-limit service's answer: %v", r)
			h.metrics.countError(codePanic)
			h.reply(h.req.Dialect, translate.NewError(translate.ErrInternal, "", "the gateway failed while checking the token budget; it has been logged"))
		}
	}()
	// The service's verdict is its answer's overallCode (its status, 200 or 429, says the same): the headers
	// are not read, which spares a host call and their copy on every request.
	var body []byte
	if numHeaders > 0 && bodySize > 0 && bodySize <= maxRateLimitAnswer {
		body, _ = proxywasm.GetHttpCallResponseBody(0, bodySize)
	}
	switch gjson.GetBytes(body, "overallCode").String() {
	case "OK":
		h.metrics.countBudget("ok")
		h.budget.checked = true
		h.resumeRequest()
	case "OVER_LIMIT":
		h.metrics.countBudget("over_limit")
		h.refuseOverBudget(body)
	default:
		h.plugin.logBudgetFailure("the rate-limit service answered " + strconv.Quote(boundedText(body, 200)) +
			": check that it runs, serves /json, and knows domain " + strconv.Quote(h.cfg.budgets.domain))
		if h.budgetServiceFailed() == types.ActionContinue {
			h.resumeRequest()
		}
	}
}

// maxRateLimitAnswer bounds the rate-limit service's answer the filter reads: a few statuses.
const maxRateLimitAnswer = 64 << 10

func (h *httpContext) resumeRequest() {
	if err := proxywasm.ResumeHttpRequest(); err != nil {
		proxywasm.LogErrorf("aidialect: resuming the request after its budget check failed: %v", err)
	}
}

// budgetServiceFailed applies on_service_failure: the request goes on (ActionContinue; it is charged at the
// end all the same) or is refused with 503.
func (h *httpContext) budgetServiceFailed() types.Action {
	h.metrics.countBudget("service_failed")
	if h.cfg.budgets.failClosed {
		return h.reply(h.req.Dialect, translate.NewError(translate.ErrBudgetUnavailable, "",
			"the gateway could not check your token budget (its rate-limit service did not answer), and refuses requests until it can: retry later"))
	}
	h.budget.checked = true
	h.budget.reserved = 0 // nothing was added
	return types.ActionContinue
}

// refuseOverBudget answers 429 budget_exceeded, naming the spent budget, with Retry-After when its window
// resets (the longest of the spent windows: all must reset before the request fits).
func (h *httpContext) refuseOverBudget(body []byte) {
	cfg := &h.cfg.budgets
	names := make([]string, 0, 2)
	if cfg.perConsumer {
		names = append(names, "of consumer "+strconv.Quote(h.budget.consumer))
	}
	if cfg.perModel {
		names = append(names, "of consumer "+strconv.Quote(h.budget.consumer)+" for model "+strconv.Quote(h.budget.model))
	}
	wait := int64(0)
	spent := ""
	i := 0
	gjson.GetBytes(body, "statuses").ForEach(func(_, st gjson.Result) bool {
		if i >= len(names) {
			return false
		}
		if st.Get("code").String() == "OVER_LIMIT" {
			if s := durationSeconds(st.Get("durationUntilReset").String()); s > wait {
				wait = s
			}
			if spent == "" {
				spent = "the token budget " + names[i]
				if limit := st.Get("currentLimit"); limit.Exists() {
					spent += " (" + strconv.FormatInt(limit.Get("requestsPerUnit").Int(), 10) + " tokens per " +
						strings.ToLower(limit.Get("unit").String()) + ")"
				}
			}
		}
		i++
		return true
	})
	if spent == "" {
		spent = "a token budget " + names[0]
	}
	message := spent + " is spent"
	headers := [][2]string{{"content-type", "application/json"}, {"x-aidialect-error", string(translate.ErrBudgetExceeded)}}
	if wait > 0 {
		message += ": retry after " + strconv.FormatInt(wait, 10) + " s, when its window resets"
		headers = append(headers, [2]string{"retry-after", strconv.FormatInt(wait, 10)})
		if wait > maxSDKRetryWait {
			headers = append(headers, [2]string{"x-should-retry", "false"})
		}
	} else {
		message += ": retry when its window resets"
	}
	e := translate.NewError(translate.ErrBudgetExceeded, "", message)
	h.metrics.countError(string(e.Code))
	h.sendLocal(e.Status(), e.Body(h.req.Dialect), headers)
}

// maxSDKRetryWait is the longest Retry-After (seconds) worth an SDK's automatic retry. Beyond it the refusal
// carries x-should-retry: false, which the OpenAI SDKs read: the Node SDK would otherwise sleep for the whole
// Retry-After inside the call (hours for a day's budget), and the Python SDK, which ignores a Retry-After over
// 60 s, would back off for a second and be refused again, each retry costing its estimate.
const maxSDKRetryWait = 60

// durationSeconds reads a protobuf JSON duration ("47s", "0.250s") as whole seconds, rounded up; 0 when it
// is not one, or over a year (no window of the service is longer).
func durationSeconds(d string) int64 {
	if len(d) < 2 || d[len(d)-1] != 's' || len(d) > 24 {
		return 0
	}
	whole, frac, _ := strings.Cut(d[:len(d)-1], ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n < 0 || n > 366*86400 {
		return 0
	}
	if strings.Trim(frac, "0") != "" {
		n++
	}
	return n
}

// boundedText is the start of an answer, for a log line.
func boundedText(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// noteUsage records an answer's usage: counted in the metrics, and kept for the budget charge.
func (h *httpContext) noteUsage(u translate.Usage) {
	h.metrics.countTokens(h.up.route.metricID, u)
	h.metrics.genAI(&h.up.route, h.req.Op).recordTokens(u)
	if u.Seen {
		h.budget.used = min(h.budget.used+usageTokens(u.PromptTokens)+usageTokens(u.CompletionTokens), maxExchangeTokens)
	}
}

// maxExchangeTokens bounds the tokens one exchange is charged, far above any model's context and output:
// a broken upstream's usage (10^19, negative) must not wrap the charge's sum, nor push the service's Redis
// counters toward their 64-bit limit, where every later charge of the key fails.
const maxExchangeTokens = 1 << 32

func usageTokens(n int64) int64 { return min(max(n, 0), maxExchangeTokens) }

// chargeBudget queues what the exchange used beyond its reservation, once it is over.
func (h *httpContext) chargeBudget() {
	bs := &h.budget
	if !h.cfg.budgets.on || !bs.checked {
		return
	}
	h.metrics.countBudgetTokens(bs.consumer, max(bs.used, bs.reserved))
	if extra := bs.used - bs.reserved; extra > 0 {
		h.plugin.charges.add(bs.consumer, bs.model, extra)
	}
}

// chargeQueue is one worker's charges not yet sent, summed per consumer and model: its size is bounded by
// the configuration's consumers and model entries, not by traffic.
type chargeQueue struct {
	pending  map[chargeKey]int64
	inFlight map[chargeKey]int64 // sent, answer awaited; put back if the charge fails
	// logAt is when a service failure was last logged (unix ms), so that a down service logs once a minute.
	logAt int64
}

type chargeKey struct{ consumer, model string }

func (q *chargeQueue) add(consumer, model string, tokens int64) {
	if q.pending == nil {
		q.pending = map[chargeKey]int64{}
	}
	// Saturated: a sum past what the service reads as one addend (and Redis adds) would be refused with every
	// other charge of the callout, at every flush.
	k := chargeKey{consumer, model}
	q.pending[k] = min(q.pending[k]+tokens, maxQueuedTokens)
}

// maxQueuedTokens bounds a descriptor's hits_addend: one key's queued charge, and a consumer's sum over its
// model entries (saturated the same way when the flush adds them up).
const maxQueuedTokens = 1 << 40

// flushCharges sends the queued charges in one callout, from the root context (OnTick).
func (p *pluginContext) flushCharges() {
	q := &p.charges
	cfg := &p.cfg.budgets
	if !cfg.on || len(q.pending) == 0 || q.inFlight != nil {
		return
	}
	// One descriptor per consumer and model entry (with consumer_model), and one per consumer summing its
	// entries (with consumer).
	body := cfg.rateLimitBody(func(b []byte) []byte {
		perConsumer := map[string]int64{}
		first := true
		add := func(consumer, model string, tokens int64) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendDescriptor(b, consumer, model, tokens)
		}
		for k, tokens := range q.pending {
			perConsumer[k.consumer] = min(perConsumer[k.consumer]+tokens, maxQueuedTokens)
			if cfg.perModel {
				add(k.consumer, k.model, tokens)
			}
		}
		if cfg.perConsumer {
			for consumer, tokens := range perConsumer {
				add(consumer, "", tokens)
			}
		}
		return b
	})
	if _, err := proxywasm.DispatchHttpCall(cfg.cluster, cfg.rateLimitRequest(), body, nil, chargeTimeoutMs, p.onChargeAnswer); err != nil {
		p.logBudgetFailure("Envoy refused a callout to cluster " + strconv.Quote(cfg.cluster) + " (" + err.Error() + "): charges wait")
		p.metrics.countBudget("charge_failed")
		return
	}
	q.inFlight, q.pending = q.pending, nil
}

// chargeTimeoutMs bounds a charge's callout: it holds no request, so it may wait longer than an admission.
const chargeTimeoutMs = 5000

// onChargeAnswer: the service counted the charges (200, or 429: counted all the same, over the limit), or
// they go back to the queue for the next flush.
func (p *pluginContext) onChargeAnswer(numHeaders, _, _ int) {
	q := &p.charges
	sent := q.inFlight
	q.inFlight = nil
	status := 0
	if numHeaders > 0 {
		if v, err := proxywasm.GetHttpCallResponseHeaders(); err == nil {
			for _, kv := range v {
				if kv[0] == ":status" {
					status = parseStatus(kv[1])
				}
			}
		}
	}
	if status == 200 || status == 429 {
		total := int64(0)
		for _, tokens := range sent {
			total += tokens
		}
		p.metrics.countCharged(total)
		return
	}
	p.metrics.countBudget("charge_failed")
	p.logBudgetFailure("the rate-limit service did not take a charge (answer " + strconv.Itoa(status) + "): it is sent again with the next one")
	for k, tokens := range sent {
		q.add(k.consumer, k.model, tokens)
	}
}

// logBudgetFailure logs a rate-limit service failure at most once a minute per worker.
func (p *pluginContext) logBudgetFailure(what string) {
	now := nowMillis()
	if p.charges.logAt != 0 && now-p.charges.logAt < 60_000 {
		return
	}
	p.charges.logAt = now
	proxywasm.LogWarnf("aidialect: token budgets: %s (logged at most once a minute)", what)
}

// tickMillis is the root context's tick: the body watch's period, or the charges' flush period when budgets
// are on and it is shorter.
func (c *config) tickMillis() int {
	if c.budgets.on && c.budgets.flushMs < bodyWatchTick {
		return c.budgets.flushMs
	}
	return bodyWatchTick
}

// warnBudgets reports a budget configuration that counts less than an operator may think.
func warnBudgets(c *config, warn func(format string, args ...any)) {
	if !c.budgets.on {
		return
	}
	if len(c.consumers) == 0 {
		warn("budgets without consumers: every request shares one budget, consumer %q (add consumers to give each team its own)", anonymousConsumer)
	}
}
