package main

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/health"
	"github.com/aidialect/aidialect/internal/redact"
	"github.com/aidialect/aidialect/internal/sha256"
	"github.com/aidialect/aidialect/translate"
)

// Failover (README "Failover"): a model name may be served by several providers, of any dialects, tried in
// order of priority (shared by weight within one). Before a request is sent, candidates benched in the
// process-wide health store (internal/health) are skipped, so a throttled or failing provider costs no
// attempt. When the answer to an attempt is a retryable failure (429, 5xx, Envoy's own 503 and 504) and
// nothing of it went to the client, the filter renders the request for the next candidate, from the
// client's original, sends it by an HTTP callout to that provider's cluster, and answers the client with the
// translation of what comes back (docs/envoy-host.md section 9: Envoy buffers a callout's whole answer).

// maxCandidates bounds the providers of one model name (an attempt plan is a fixed array).
const maxCandidates = 8

// maxContextWindow bounds a declared context window (tokens): larger than any model's, small enough to be a
// plain int everywhere.
const maxContextWindow = 100_000_000

// healthKeyPrefix starts every shared-data key of the filter: the store is shared by every plugin of the
// same vm_id.
const healthKeyPrefix = "aidialect/health/"

type rawFailover struct {
	Attempts              *int
	Stream                string
	ServedByHeader        *bool
	CalloutTimeoutSeconds *int
	CircuitThreshold      *int
	CircuitOpenSeconds    *int
	ThrottleSeconds       *int
	RejectedKeySeconds    *int
	MaxBenchSeconds       *int
	ProbeTimeoutSeconds   *int
	Health                string
}

func decodeFailover(field string, v gjson.Result, f *rawFailover) error {
	return decodeObject(field, v, func(key, path string, v gjson.Result) error {
		switch key {
		case "attempts":
			return decodeInt(path, v, &f.Attempts)
		case "stream":
			return decodeString(path, v, &f.Stream)
		case "served_by_header":
			var b bool
			err := decodeBool(path, v, &b)
			f.ServedByHeader = &b
			return err
		case "callout_timeout_seconds":
			return decodeInt(path, v, &f.CalloutTimeoutSeconds)
		case "circuit_threshold":
			return decodeInt(path, v, &f.CircuitThreshold)
		case "circuit_open_seconds":
			return decodeInt(path, v, &f.CircuitOpenSeconds)
		case "throttle_seconds":
			return decodeInt(path, v, &f.ThrottleSeconds)
		case "rejected_key_seconds":
			return decodeInt(path, v, &f.RejectedKeySeconds)
		case "max_bench_seconds":
			return decodeInt(path, v, &f.MaxBenchSeconds)
		case "probe_timeout_seconds":
			return decodeInt(path, v, &f.ProbeTimeoutSeconds)
		case "health":
			return decodeString(path, v, &f.Health)
		}
		return unknownKey(path)
	})
}

// streamFailover is what a stream request does when its attempt fails before the stream began.
type streamFailover uint8

const (
	// streamFailoverOff: the failure goes to the client (translated); the health it recorded sends the next
	// requests elsewhere.
	streamFailoverOff streamFailover = iota
	// streamFailoverBuffered: the next candidate is asked by a callout, whose whole stream Envoy buffers; the
	// client gets it, translated, when it ended.
	streamFailoverBuffered
)

type failoverConfig struct {
	attempts       int
	stream         streamFailover
	servedBy       bool
	calloutTimeout uint32 // milliseconds
	policy         health.Policy
	// healthOff: nothing is benched, every request tries its candidates in order (failover.health "off").
	healthOff bool
}

func parseFailover(raw rawFailover) (failoverConfig, error) {
	f := failoverConfig{attempts: 3, calloutTimeout: 120_000, policy: health.DefaultPolicy}
	seconds := func(field string, v *int, lo, hi int, dst *int64) error {
		if v == nil {
			return nil
		}
		if *v < lo || *v > hi {
			return fieldErr("failover."+field, "must be between %d and %d seconds", lo, hi)
		}
		*dst = int64(*v) * 1000
		return nil
	}
	if raw.Attempts != nil {
		if *raw.Attempts < 1 || *raw.Attempts > maxCandidates {
			return f, fieldErr("failover.attempts", "must be between 1 (no failover) and %d", maxCandidates)
		}
		f.attempts = *raw.Attempts
	}
	switch raw.Stream {
	case "", "off":
	case "buffered":
		f.stream = streamFailoverBuffered
	default:
		return f, fieldErr("failover.stream", "%q is not one of off (a failed stream fails over from the next request on), buffered (the fallback's stream is delivered whole when it ended)", raw.Stream)
	}
	switch raw.Health {
	case "", "on":
	case "off":
		f.healthOff = true
	default:
		return f, fieldErr("failover.health", "%q is not one of on (the default: throttled and failing providers are benched), off (never benched; every request tries the candidates in order)", raw.Health)
	}
	if raw.ServedByHeader != nil {
		f.servedBy = *raw.ServedByHeader
	}
	var timeout int64 = int64(f.calloutTimeout)
	if err := seconds("callout_timeout_seconds", raw.CalloutTimeoutSeconds, 1, 3600, &timeout); err != nil {
		return f, err
	}
	f.calloutTimeout = uint32(timeout)
	if raw.CircuitThreshold != nil {
		if *raw.CircuitThreshold < 1 || *raw.CircuitThreshold > 1000 {
			return f, fieldErr("failover.circuit_threshold", "must be between 1 and 1000 consecutive failures")
		}
		f.policy.CircuitThreshold = *raw.CircuitThreshold
	}
	p := &f.policy
	for _, s := range []struct {
		name   string
		v      *int
		lo, hi int
		dst    *int64
	}{
		{"circuit_open_seconds", raw.CircuitOpenSeconds, 1, 86400, &p.OpenMillis},
		{"throttle_seconds", raw.ThrottleSeconds, 1, 86400, &p.ThrottleMillis},
		{"rejected_key_seconds", raw.RejectedKeySeconds, 0, 86400 * 7, &p.RejectedMillis},
		{"max_bench_seconds", raw.MaxBenchSeconds, 1, 86400 * 7, &p.MaxBenchMillis},
		{"probe_timeout_seconds", raw.ProbeTimeoutSeconds, 1, 3600, &p.ProbeMillis},
	} {
		if err := seconds(s.name, s.v, s.lo, s.hi, s.dst); err != nil {
			return f, err
		}
	}
	return f, nil
}

// providerKey is one of a provider's credentials.
type providerKey struct {
	value       string
	authHeaders []translate.Header
	// label names the key in logs and metrics: its position ("#2"), never its value.
	label string
	// healthKey is its entry in the health store: named by a fingerprint of the key, so reordering the keys
	// in the configuration keeps each bench on its key (the provider's own entry when it has one key).
	healthKey string
}

// maxProviderKeys bounds api_key_envs.
const maxProviderKeys = 4096

// readKeys reads api_key_envs (getenv nil: api_keys, the keys themselves).
func (p *provider) readKeys(field string, names []string, getenv func(string) string, env envSource) error {
	if len(names) == 0 || len(names) > maxProviderKeys {
		return fieldErr(field, "must list 1 to %d keys", maxProviderKeys)
	}
	seen := make(map[string]int, len(names))
	for i, name := range names {
		item := field + "[" + strconv.Itoa(i) + "]"
		value := name
		if getenv != nil {
			var err error
			if value, err = keyFromEnv(item, name, getenv, env); err != nil {
				return err
			}
		}
		switch {
		case value == "":
			return fieldErr(item, "is empty")
		case !translate.HeaderSafe(value):
			return fieldErr(item, "the API key contains control characters (it becomes a header value): check how it was pasted")
		}
		if j, dup := seen[value]; dup {
			return fieldErr(item, "holds the same key as %s[%d]: each key is benched on its own, list it once", field, j)
		}
		seen[value] = i
		p.keys = append(p.keys, providerKey{value: value})
	}
	p.key = p.keys[0].value
	return nil
}

// keyFingerprint names a key in the health store without its material: 8 bytes of its SHA-256.
func keyFingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// sharedStore is the health store over proxy-wasm shared data.
type sharedStore struct{}

func (sharedStore) Get(key string) ([]byte, uint32, error) {
	v, cas, err := proxywasm.GetSharedData(key)
	if err == types.ErrorStatusNotFound {
		return nil, 0, health.ErrNotFound
	}
	return v, cas, err
}

func (sharedStore) Set(key string, value []byte, cas uint32) error {
	err := proxywasm.SetSharedData(key, value, cas)
	if err == types.ErrorStatusCasMismatch {
		return health.ErrCasMismatch
	}
	return err
}

// healthStore is the store every plugin's Tracker uses (a variable: native tests count its reads).
var healthStore health.Store = sharedStore{}

// nowMillis is the clock benches are kept in (a variable: native tests move it).
var nowMillis = wallClock

// hostClock: the host may have the wall-clock foreign function; false once it answered that it has not.
var hostClock = true

// wallClockFunction is a foreign function of the development hosts (internal/hostemu: the plugin tests in wasm
// mode and the local gateway), whose wazero runtime gives the module a fake clock that barely moves. Envoy has
// no such function and answers NotFound once; the filter then reads the module's clock (WASI
// clock_time_get, which Envoy serves from the real clock) for good.
const wallClockFunction = "aidialect_wall_clock_ms"

func wallClock() int64 {
	if hostClock {
		if b, err := proxywasm.CallForeignFunction(wallClockFunction, nil); err == nil && len(b) == 8 {
			return int64(binary.LittleEndian.Uint64(b))
		}
		hostClock = false
	}
	return time.Now().UnixMilli()
}

// prepareHealth creates every configured target's entry (health.Tracker.Prepare).
func prepareHealth(c *config, t *health.Tracker) {
	for _, p := range c.providers {
		t.Prepare(p.healthKey)
		if len(p.keys) > 1 {
			for _, k := range p.keys {
				t.Prepare(k.healthKey)
			}
		}
	}
}

// attemptPlan is the order a request tries its candidates in, and what the skipped ones said.
type attemptPlan struct {
	order [maxCandidates]uint8
	n     int // candidates in order
	next  int // the next position to consider
	// comeback is the earliest moment a skipped candidate may be tried again (unix ms; 0: none skipped);
	// throttledOnly: every skip was a rate limit.
	comeback      int64
	throttledOnly bool
	// windowLimited: a context-length error was answered, and from then on only candidates declaring a
	// context window larger than largerThan are tried (an undeclared window is 0, never larger: with
	// largerThan 0, any declared window is).
	windowLimited bool
	largerThan    int
	// skipped are the providers passed over because benched, with why, for x-aidialect-skipped.
	skipped  [maxCandidates]skippedCandidate
	nSkipped int
}

// plan orders the request's candidates: by priority (the configuration's order), and within one priority
// starting at a pick weighted by the entries' weights, the rest following in turn. A request that names a
// provider's stored state (pinned) has only its first candidate.
func (h *httpContext) plan(pinned bool) {
	pl := &h.planned
	*pl = attemptPlan{throttledOnly: true}
	c := h.candidates
	if pinned {
		c = c[:1]
	}
	for start := 0; start < len(c); {
		end := start + 1
		total := c[start].weight
		for end < len(c) && c[end].priority == c[start].priority {
			total += c[end].weight
			end++
		}
		first := start
		if end-start > 1 {
			h.plugin.picks++
			pick := int(h.plugin.picks * 2654435761 % uint64(total))
			for first = start; pick >= c[first].weight; first++ {
				pick -= c[first].weight
			}
		}
		for i := 0; i < end-start; i++ {
			pl.order[pl.n] = uint8(start + (first-start+i)%(end-start))
			pl.n++
		}
		start = end
	}
}

// keyBenches is what one worker last read of a multi-key provider's benched keys. A key's bench never
// shortens (a 429 or a 401 only pushes its end later; a success does not end it early), so a key remembered
// as benched until a moment is benched at least until then: it is skipped without a shared-data read, and
// a provider whose every key is benched costs one comparison per request instead of a read per key (with
// api_keys' 4096 keys, a client whose traffic got the keys throttled would otherwise make each of its cheap
// refused requests cost thousands of host calls under the process-wide lock).
type keyBenches struct {
	until  []int64 // unix ms; 0 or past: not known benched
	reason []health.Reason
	// allUntil: every key is benched at least until then (the earliest of their ends); allThrottled: each by
	// a rate limit.
	allUntil     int64
	allThrottled bool
}

func (p *pluginContext) keyBenchesOf(pr *provider) *keyBenches {
	if len(p.keyBenches) <= pr.index {
		p.keyBenches = append(p.keyBenches, make([]*keyBenches, pr.index+1-len(p.keyBenches))...)
	}
	kb := p.keyBenches[pr.index]
	if kb == nil {
		kb = &keyBenches{until: make([]int64, len(pr.keys)), reason: make([]health.Reason, len(pr.keys))}
		p.keyBenches[pr.index] = kb
	}
	return kb
}

// admitKey asks the health store about one key of a multi-key provider, unless this worker knows it benched.
func (h *httpContext) admitKey(p *provider, k int, now int64) health.Admission {
	kb := h.plugin.keyBenchesOf(p)
	if kb.until[k] > now {
		return health.Admission{Reason: kb.reason[k], Until: kb.until[k]}
	}
	a := h.plugin.health.Admit(p.keys[k].healthKey, now)
	if (a.Reason == health.RateLimited || a.Reason == health.KeyRejected) && a.Until > now {
		kb.until[k], kb.reason[k] = a.Until, a.Reason
	}
	return a
}

// keyUntil is when a key's bench ends (0: not benched at now), from this worker's memory when it has one.
func (h *httpContext) keyUntil(p *provider, k int, now int64) int64 {
	if until := h.plugin.keyBenchesOf(p).until[k]; until > now {
		return until
	}
	return h.plugin.health.Until(p.keys[k].healthKey, now)
}

// admitNext finds the next candidate the health store admits, and its key. ok is false when none is left.
func (h *httpContext) admitNext() (route modelRoute, key int, adm health.Admission, ok bool) {
	pl := &h.planned
	t := h.plugin.health
	// The clock is read once, and only when some entry is not clear.
	now := int64(-1)
	clock := func() int64 {
		if now < 0 {
			now = nowMillis()
		}
		return now
	}
	for pl.next < pl.n {
		route = h.candidates[pl.order[pl.next]]
		pl.next++
		if pl.windowLimited && route.contextWindow <= pl.largerThan {
			continue // the request did not fit a window at least this large
		}
		p := route.provider
		if h.cfg.failover.healthOff {
			return route, 0, health.Admission{Clear: true}, true
		}
		adm = t.AdmitAt(p.healthKey, clock)
		if adm.Reason != health.Live {
			h.noteSkip(p, adm)
			continue
		}
		providerProbe := adm.Probe
		if len(p.keys) <= 1 {
			return route, 0, adm, true
		}
		// Sticky for a consumer and model: a provider's prompt cache is per key, so the same conversation
		// keeps hitting one key while it is live.
		n := len(p.keys)
		now := clock() // a pool of keys: its benches are remembered by time
		kb := h.plugin.keyBenchesOf(p)
		if kb.allUntil <= now {
			start := int(stickyHash(h.consumerName(), h.modelName) % uint64(n))
			earliest, throttled := int64(0), true
			for i := 0; i < n; i++ {
				k := (start + i) % n
				ka := h.admitKey(p, k, now)
				if ka.Reason == health.Live {
					adm.Probe = adm.Probe || ka.Probe
					adm.Clear = adm.Clear && ka.Clear
					return route, k, adm, true
				}
				if earliest == 0 || ka.Until < earliest {
					earliest = ka.Until
				}
				throttled = throttled && ka.Reason == health.RateLimited
			}
			kb.allUntil, kb.allThrottled = earliest, throttled
		}
		if !kb.allThrottled {
			pl.throttledOnly = false
		}
		earliest := kb.allUntil
		if providerProbe {
			t.Release(p.healthKey, now) // no key to probe the provider with
		}
		h.noteSkip(p, health.Admission{Reason: health.RateLimited, Until: earliest})
		if h.metrics != nil {
			h.metrics.countFailover(p.name, "all_keys_benched")
		}
	}
	return modelRoute{}, 0, health.Admission{}, false
}

func (h *httpContext) noteSkip(p *provider, a health.Admission) {
	pl := &h.planned
	if a.Reason != health.RateLimited {
		pl.throttledOnly = false
	}
	if a.Until > 0 && (pl.comeback == 0 || a.Until < pl.comeback) {
		pl.comeback = a.Until
	}
	h.metrics.countSkip(p.name, a.Reason)
	if pl.nSkipped < len(pl.skipped) {
		pl.skipped[pl.nSkipped] = skippedCandidate{p, a.Reason}
		pl.nSkipped++
	}
}

type skippedCandidate struct {
	provider *provider
	reason   health.Reason
}

// skippedHeader is x-aidialect-skipped: the providers passed over, each with why ("openai circuit_open, llama
// rate_limited"), so that a client sees why a failover model was served by a later provider or not at all.
func (h *httpContext) skippedHeader() string {
	pl := &h.planned
	var b strings.Builder
	for i := 0; i < pl.nSkipped; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pl.skipped[i].provider.name)
		b.WriteByte(' ')
		b.WriteString(pl.skipped[i].reason.String())
	}
	return b.String()
}

func (h *httpContext) consumerName() string {
	if h.consumer != nil {
		return h.consumer.name
	}
	return h.clientKey // passthrough: the client's own key stands for the client
}

// stickyHash is FNV-1a over the two names.
func stickyHash(a, b string) uint64 {
	hash := uint64(14695981039346656037)
	for _, s := range [2]string{a, b} {
		for i := 0; i < len(s); i++ {
			hash ^= uint64(s[i])
			hash *= 1099511628211
		}
		hash ^= 0xff
		hash *= 1099511628211
	}
	return hash
}

// unavailable is the answer when every candidate is benched: 429 when each was rate limited, else 503, with
// Retry-After at the earliest comeback.
func (h *httpContext) unavailable(model string) types.Action {
	pl := &h.planned
	code, why := translate.ErrProvidersUnavailable, "unavailable (rate limited, the gateway's key refused, or failing)"
	if pl.throttledOnly {
		code, why = translate.ErrProvidersThrottled, "rate limited"
	}
	e := translate.NewError(code, "", "the providers of the model "+quoteBounded(model)+" are all "+why+
		", so the request was not sent: retry after the time in Retry-After")
	h.metrics.countError(string(code))
	headers := [][2]string{{"content-type", "application/json"}, {"x-aidialect-error", string(code)}}
	if ra := retryAfterSeconds(pl.comeback); ra != "" {
		headers = append(headers, [2]string{"retry-after", ra})
	}
	if h.cfg.failover.servedBy && pl.nSkipped > 0 {
		headers = append(headers, [2]string{"x-aidialect-skipped", h.skippedHeader()})
	}
	return h.sendLocal(e.Status(), e.Body(h.req.Dialect), headers)
}

// retryAfterSeconds is Retry-After for a moment (unix ms), rounded up; "" for none or past.
func retryAfterSeconds(at int64) string {
	if at == 0 {
		return ""
	}
	wait := at - nowMillis()
	if wait <= 0 {
		return ""
	}
	return strconv.FormatInt((wait+999)/1000, 10)
}

// verdict classifies an attempt's answer for the health store and for failover.
func verdict(status int) (f health.Failure, retryable bool) {
	switch {
	case status == 429:
		return health.Throttled, true
	case status == 401 || status == 403:
		return health.Rejected, false
	case status >= 500 || status == 408 || status == 0:
		return health.ServerFailure, true
	}
	return health.Success, false
}

// recordAnswer writes what the current attempt's answer says into the health store, logs a change worth an
// operator's attention, and counts it. retryAfter is the wait the answer asked for.
func (h *httpContext) recordAnswer(status int, header func(string) string) {
	f, _ := verdict(status)
	if h.cfg.failover.healthOff {
		return
	}
	up := &h.up
	p := up.route.provider
	if f == health.Success && up.admitted.Clear {
		return // the healthy path writes nothing
	}
	if p.passthrough && (f == health.Rejected || f == health.Throttled) {
		// The client's own key was refused or throttled (OpenAI's insufficient_quota is a 429): nothing about
		// the provider, and one client's exhausted key must not bench the provider for every other client.
		return
	}
	t := h.plugin.health
	now := nowMillis()
	var retryAfter int64
	if f == health.Throttled && header != nil {
		retryAfter = health.RetryAfterMillis(header, time.UnixMilli(now))
	}
	entryKey, keyLabel := p.healthKey, ""
	multiKey := len(p.keys) > 1
	if multiKey && (f == health.Throttled || f == health.Rejected) {
		k := &p.keys[up.key]
		entryKey, keyLabel = k.healthKey, k.label
	}
	up.recorded = true
	out := t.Record(entryKey, f, retryAfter, now)
	if f == health.Success && multiKey {
		t.Record(p.keys[up.key].healthKey, f, 0, now)
	}
	switch out.Change {
	case health.Opened:
		proxywasm.LogWarnf("aidialect: circuit of provider %s opened after failures (last answer %d) until %s; one request will probe it then",
			p.name, status, time.UnixMilli(out.Until).UTC().Format(time.RFC3339))
		h.metrics.countCircuit(p.name, "opened")
	case health.Closed:
		proxywasm.LogInfof("aidialect: circuit of provider %s closed: a probe succeeded", p.name)
		h.metrics.countCircuit(p.name, "closed")
	case health.Benched:
		what := "provider " + p.name
		if keyLabel != "" {
			what = "key " + keyLabel + " of provider " + p.name
		}
		if f == health.Rejected {
			proxywasm.LogErrorf("aidialect: %s was refused (%d): benched until %s; check the key", what, status,
				time.UnixMilli(out.Until).UTC().Format(time.RFC3339))
		}
		h.metrics.countBench(p.name, f)
	}
}

// releaseProbe gives back the probe an attempt claimed without bringing an answer (health.Tracker.Release):
// the provider's entry and, with several keys, the key's, whichever of them it claimed.
func (h *httpContext) releaseProbe(p *provider, key int) {
	if h.cfg.failover.healthOff {
		return
	}
	t, now := h.plugin.health, nowMillis()
	t.Release(p.healthKey, now)
	if len(p.keys) > 1 && key < len(p.keys) {
		t.Release(p.keys[key].healthKey, now)
	}
}

// failoverPossible reports whether the current attempt's failed answer may be replaced by another
// attempt's: a retryable status, nothing of the answer sent, the request whole and kept, and attempts left.
func (h *httpContext) failoverPossible(status int) bool {
	if _, retryable := verdict(status); !retryable || !h.anotherAttemptPossible() {
		return false
	}
	if h.planned.next >= h.planned.n && !(status == 429 && len(h.up.route.provider.keys) > 1) {
		return false // no other candidate, and no other key of this one to try
	}
	return true
}

// anotherAttemptPossible reports whether the request may still be sent again: whole and kept, not pinned to
// its provider, attempts left, and not a stream unless failover.stream is buffered.
func (h *httpContext) anotherAttemptPossible() bool {
	if h.request != requestSent || h.state == nil || h.pinned || h.attempts >= h.cfg.failover.attempts {
		return false
	}
	return !h.state.body.Stream || h.cfg.failover.stream == streamFailoverBuffered
}

// largerWindowAhead reports whether a candidate not yet tried declares a context window larger than the
// current attempt's (an undeclared window counts as 0): a context-length error from this attempt is then
// worth reading. At most maxCandidates comparisons.
func (h *httpContext) largerWindowAhead(status int) bool {
	if status != 400 && status != 413 && status != 422 {
		return false
	}
	if !h.anotherAttemptPossible() {
		return false
	}
	pl := &h.planned
	window := max(h.up.route.contextWindow, pl.largerThan)
	for i := pl.next; i < pl.n; i++ {
		if h.candidates[pl.order[i]].contextWindow > window {
			return true
		}
	}
	return false
}

// failOverForContext fails the attempt over after its provider said the request is longer than its model's
// context window: only to candidates declaring a larger window, from now on for this request.
func (h *httpContext) failOverForContext() bool {
	h.planned.largerThan = max(h.up.route.contextWindow, h.planned.largerThan)
	h.planned.windowLimited = true
	return h.failOver("context_length")
}

// failOver starts the next attempt by a callout, if a candidate is admitted; the failed answer is held
// (its headers paused, its body dropped) until the callout's answer replaces it. It returns false when no
// candidate is left, and the failed answer goes on as usual.
func (h *httpContext) failOver(reason string) bool {
	from := h.up.route.provider.name
	if p := h.up.route.provider; reason == "rate_limited" && len(p.keys) > 1 && h.attempts < h.cfg.failover.attempts {
		// A key's rate limit is the key's: the same provider with another live key comes first.
		now := nowMillis()
		for i := 1; i < len(p.keys); i++ {
			k := (h.up.key + i) % len(p.keys)
			a := health.Admission{Clear: true}
			if !h.cfg.failover.healthOff {
				a = h.admitKey(p, k, now)
			}
			if a.Reason != health.Live {
				continue
			}
			if !h.dispatchAttempt(h.up.route, k, a) {
				// Not the key's fault (the request does not render for this provider, or Envoy lacks its
				// cluster): another key would fail alike, so the other providers are tried, once each.
				break
			}
			h.metrics.countFailover(from+".to."+from, "key_rate_limited")
			h.answer = answerRetrying
			return true
		}
	}
	for h.attempts < h.cfg.failover.attempts {
		route, key, adm, ok := h.admitNext()
		if !ok {
			return false
		}
		if h.dispatchAttempt(route, key, adm) {
			h.metrics.countFailover(from+".to."+route.provider.name, reason)
			h.answer = answerRetrying
			return true
		}
	}
	return false
}

// dispatchAttempt renders the request for the candidate and sends it by a callout to its cluster.
func (h *httpContext) dispatchAttempt(route modelRoute, key int, adm health.Admission) (sent bool) {
	prev, prevAttempts := h.up, h.attempts
	defer func() {
		if !sent {
			if adm.Probe {
				h.releaseProbe(route.provider, key)
			}
			// The failed answer being held is still the previous attempt's: it is what the client gets if no
			// other candidate serves.
			h.up, h.attempts = prev, prevAttempts
		}
	}()
	head, err := h.startAttempt(route, key, adm, h.modelName)
	if err != nil {
		// This candidate cannot serve the request (an operation its dialect lacks): the next may.
		return false
	}
	out, rerr := h.up.Render(make([]byte, 0, len(h.rawBody)+len(h.rawBody)/8+256), &h.req, &h.state.body)
	if rerr != nil {
		return false
	}
	p := route.provider
	headers := make([][2]string, 0, 8+len(head.Set))
	headers = append(headers, [2]string{":method", "POST"}, [2]string{":path", head.Path},
		[2]string{":authority", p.host}, [2]string{"content-type", "application/json"})
	for _, hdr := range h.authFor(p, key) {
		headers = append(headers, [2]string{hdr.Name, hdr.Value})
	}
	for _, hdr := range head.Set {
		headers = append(headers, [2]string{hdr.Name, hdr.Value})
	}
	if h.state.body.Stream {
		headers = append(headers, [2]string{"accept", "text/event-stream"})
	}
	headers = append(headers, h.calloutHeaders...)
	if _, err := proxywasm.DispatchHttpCall(p.cluster, headers, out.Body, nil, h.cfg.failover.calloutTimeout, h.onCalloutAnswer); err != nil {
		// An unknown cluster (the deployment lacks it): the operator's to fix; check-config cannot see
		// Envoy's clusters.
		proxywasm.LogErrorf("aidialect: failing over to provider %s failed: Envoy refused a callout to cluster %q (%v): add the cluster, or set the provider's \"cluster\"",
			p.name, p.cluster, err)
		return false
	}
	h.calloutPending = true
	h.metrics.countAttempt(p.index)
	return true
}

// calloutForwardedHeaders are the client request's headers a failover attempt carries as the first attempt
// did: the trace context (W3C and Zipkin's B3, so the provider's span joins the client's trace), Envoy's
// request id (so the provider's logs and the access log meet) and the client's user agent (some providers
// tell SDKs apart by it). Nothing else of the client's request goes: its credentials, cookies and the
// filter's own routing header are not the fallback provider's.
var calloutForwardedHeaders = []string{"traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid",
	"x-b3-parentspanid", "x-b3-sampled", "x-request-id", "user-agent"}

// keepCalloutHeaders copies the client's calloutForwardedHeaders (the first value of each) out of the request
// headers while they can still be read: once a headers callback returned Continue, Envoy answers every read
// of that map with BadArgument (docs/envoy-host.md section 1), so a request routed on its request line could
// not give them to a later failover attempt. Copied, so the host's whole header map is not kept alive.
func (h *httpContext) keepCalloutHeaders(pairs [][2]string) {
	for _, name := range calloutForwardedHeaders {
		for _, kv := range pairs {
			if kv[0] == name {
				if kv[1] != "" {
					h.calloutHeaders = append(h.calloutHeaders, [2]string{name, strings.Clone(kv[1])})
				}
				break
			}
		}
	}
}

// authFor is the credential headers of a provider's key (passthrough: the client's own key).
func (h *httpContext) authFor(p *provider, key int) []translate.Header {
	if p.passthrough {
		if h.clientKey == "" {
			return nil
		}
		return translate.ProviderAuthHeaders(p.dialect, h.clientKey, &h.up.route.settings)
	}
	if key < len(p.keys) {
		return p.keys[key].authHeaders
	}
	return nil
}

// onCalloutAnswer is the callout's answer (numHeaders 0: it failed, timed out, or its answer was over Envoy's
// buffer limit). A retryable failure goes on to the next candidate; anything else answers the client.
func (h *httpContext) onCalloutAnswer(numHeaders, bodySize, _ int) {
	h.calloutPending = false
	if h.streamGone || h.answer != answerRetrying {
		return // Envoy cancels the callouts of a finished stream; a host that does not must change nothing
	}
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogErrorf("aidialect: panic while handling a failover answer: %v", r)
			h.metrics.countError(codePanic)
			h.reply(h.req.Dialect, translate.NewError(translate.ErrInternal, "", "the gateway failed while translating this answer; it has been logged"))
		}
	}()
	status := 0
	var headers [][2]string
	if numHeaders > 0 {
		headers, _ = proxywasm.GetHttpCallResponseHeaders()
		for _, kv := range headers {
			if kv[0] == ":status" {
				status = parseStatus(kv[1])
			}
		}
	}
	var body []byte
	if bodySize > 0 {
		body, _ = proxywasm.GetHttpCallResponseBody(0, bodySize)
	}
	h.up.status = status
	header := func(name string) string {
		for _, kv := range headers {
			if kv[0] == name {
				return kv[1]
			}
		}
		return ""
	}
	h.recordAnswer(status, header)
	if _, retryable := verdict(status); retryable && h.attempts < h.cfg.failover.attempts {
		reason := failoverReason(status)
		if h.failOver(reason) {
			return
		}
	}
	if h.largerWindowAhead(status) && translate.IsContextLengthError(status, body) && h.failOverForContext() {
		return
	}
	h.answerFromCallout(status, header, body)
}

// parseStatus reads a callout answer's :status: three digits, 100 to 599; anything else (which Envoy's codecs
// never pass on) is 0, a malformed answer treated as no answer, so no out-of-range status reaches a client.
func parseStatus(v string) int {
	if len(v) != 3 || v[0] < '1' || v[0] > '5' || v[1] < '0' || v[1] > '9' || v[2] < '0' || v[2] > '9' {
		return 0
	}
	return int(v[0]-'0')*100 + int(v[1]-'0')*10 + int(v[2]-'0')
}

func failoverReason(status int) string {
	switch {
	case status == 429:
		return "rate_limited"
	case status == 0:
		return "unreachable"
	case status == 504 || status == 408:
		return "timeout"
	}
	return "server_error"
}

// answerFromCallout answers the client with the last attempt's answer, translated: a success, or the last
// provider's error in the client's envelope with Retry-After at the earliest comeback of any candidate.
func (h *httpContext) answerFromCallout(status int, header func(string) string, body []byte) {
	// The body is not redacted here: each branch redacts what it sends (as the first attempt's answer is).
	contentType := header("content-type")
	extra := h.servedByHeaders(nil)
	switch {
	case status == 0:
		e := translate.NewError(translate.ErrUpstreamUnreachable, "", "provider "+quoteBounded(h.up.route.provider.name)+
			" did not answer the failover attempt in time (or its answer was over Envoy's buffer limit), after the earlier providers failed: retry later")
		h.metrics.countError(string(e.Code))
		h.sendLocal(e.Status(), e.Body(h.req.Dialect), h.withRetryAfter(append(extra,
			[2]string{"content-type", "application/json"}, [2]string{"x-aidialect-error", string(e.Code)}), ""))
	case status >= 300 && status < 400:
		// As on the first attempt (OnHttpResponseHeaders): no LLM API redirects, and none is passed on.
		proxywasm.LogWarnf("aidialect: %s answered a failover attempt %d (a redirect); answered the client with an error instead", h.up.route.provider.name, status)
		e := translate.NewError(translate.ErrUpstreamRedirect, "", "provider "+quoteBounded(h.up.route.provider.name)+
			" answered a redirect ("+strconv.Itoa(status)+"), which this gateway never follows: the operator should check its host and base_path")
		h.metrics.countError(string(e.Code))
		h.sendLocal(e.Status(), e.Body(h.req.Dialect), append(extra, [2]string{"content-type", "application/json"},
			[2]string{"x-aidialect-error", string(e.Code)}))
	case status >= 400:
		clientStatus, out := h.up.ErrorAnswer(status, body)
		h.sendLocal(clientStatus, h.cfg.secrets.Redact(out), h.withRetryAfter(append(extra,
			[2]string{"content-type", "application/json"}), header("retry-after")))
	case isEventStream(contentType):
		h.up.StartStream(&h.state.stream, h.cfg.maxEventBytes)
		// Sized once: a buffered stream may be tens of MiB, and doubling would leave a trail of garbage copies
		// in linear memory, which never shrinks.
		out := make([]byte, 0, len(body)+len(body)/8+256)
		collect := func(piece []byte) { out = append(out, piece...) }
		if err := h.state.stream.WriteTo(body, collect); err != nil {
			collect(h.state.stream.Failure(translate.NewError(translate.ErrUpstreamStream, "",
				"the provider sent a stream event larger than this gateway accepts (max_event_bytes)")))
		} else {
			h.state.stream.CloseTo(collect)
		}
		h.noteUsage(h.state.stream.Usage())
		h.sendLocal(200, h.cfg.secrets.Redact(out), append(extra, [2]string{"content-type", "text/event-stream"},
			[2]string{"cache-control", "no-cache"}))
	default:
		out, answerHeaders, usage, terr := h.up.Answer(nil, body)
		h.noteUsage(usage)
		if terr != nil {
			h.metrics.countError(codeUpstreamBadJSON)
			if out == nil {
				out = body
			}
		}
		for _, hdr := range answerHeaders {
			// Decoded from the body (onchain_data), where a JSON-escaped key escaped the body's redaction.
			if h.cfg.secrets.FoundString(hdr.Value) {
				hdr.Value = redact.Placeholder
			}
			extra = append(extra, [2]string{hdr.Name, hdr.Value})
		}
		h.sendLocal(200, h.cfg.secrets.Redact(out), append(extra, [2]string{"content-type", "application/json"}))
	}
}

// servedByHeaders adds x-aidialect-served-by and x-aidialect-attempts when failover.served_by_header is on.
func (h *httpContext) servedByHeaders(headers [][2]string) [][2]string {
	if !h.cfg.failover.servedBy {
		return headers
	}
	headers = append(headers, [2]string{"x-aidialect-served-by", h.up.route.provider.name},
		[2]string{"x-aidialect-attempts", strconv.Itoa(h.attempts)})
	if h.planned.nSkipped > 0 {
		headers = append(headers, [2]string{"x-aidialect-skipped", h.skippedHeader()})
	}
	return headers
}

// withRetryAfter sets Retry-After to the earliest moment any candidate of the model comes back, else to the
// last provider's own (upstream), else leaves it out.
func (h *httpContext) withRetryAfter(headers [][2]string, upstream string) [][2]string {
	t := h.plugin.health
	now := nowMillis()
	earliest := int64(0)
	for _, r := range h.candidates {
		until := t.Until(r.provider.healthKey, now)
		if until == 0 && len(r.provider.keys) > 1 {
			until = -1
			for k := range r.provider.keys {
				u := h.keyUntil(r.provider, k, now)
				if u == 0 {
					until = 0
					break
				}
				if until < 0 || u < until {
					until = u
				}
			}
		}
		if until <= 0 {
			earliest = 0
			break
		}
		if earliest == 0 || until < earliest {
			earliest = until
		}
	}
	if ra := retryAfterSeconds(earliest); ra != "" {
		return append(headers, [2]string{"retry-after", ra})
	}
	if upstream != "" && len(upstream) <= 64 {
		return append(headers, [2]string{"retry-after", upstream})
	}
	return headers
}
