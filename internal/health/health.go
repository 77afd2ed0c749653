// Package health keeps the health of the gateway's upstream targets (providers and their API keys) in a
// store every worker of one Envoy process shares: proxy-wasm shared data, a key/value map with
// compare-and-swap (docs/envoy-host.md section 9). A target is benched while it should get no traffic: a 429
// for as long as the provider said (Retry-After, retry-after-ms, x-ratelimit-reset-*), else an exponential
// backoff; a rejected key (401/403) for a long time; and a circuit opened by consecutive server failures
// (5xx, connection failures, timeouts), which lets one real request through to probe it once its time is
// up. No synthetic traffic is ever sent.
//
// The store holds one fixed-size entry per configured target, written only when the target's health
// changes: memory does not grow with traffic, and a request to a healthy target only reads.
package health

import (
	"encoding/binary"
	"errors"
)

// Store is the process-wide map the entries live in: proxy-wasm shared data in the filter. Get returns
// ErrNotFound for a key never set; Set with the cas Get returned fails with ErrCasMismatch when another
// worker wrote the key in between (cas 0 sets unconditionally, as proxy-wasm's does).
type Store interface {
	Get(key string) (value []byte, cas uint32, err error)
	Set(key string, value []byte, cas uint32) error
}

// ErrNotFound and ErrCasMismatch are the two store outcomes the package acts on; a store returns them (or
// errors that are them) as proxy-wasm's statuses NotFound and CasMismatch.
var (
	ErrNotFound    = errors.New("health: no entry")
	ErrCasMismatch = errors.New("health: the entry changed since it was read")
)

// Reason says why a target is benched.
type Reason uint8

const (
	Live        Reason = iota
	RateLimited        // answered 429
	KeyRejected        // answered 401 or 403: the key is wrong, revoked or lacks access
	CircuitOpen        // consecutive server failures opened the circuit
	Probing            // the circuit's time is up and another request is probing it
)

var reasonNames = [...]string{"live", "rate_limited", "key_rejected", "circuit_open", "probing"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Failure is what an attempt's answer says about its target.
type Failure uint8

const (
	// Success: a 2xx answer (or any answer that proves the target works: a 4xx the client caused).
	Success Failure = iota
	// Throttled: a 429.
	Throttled
	// Rejected: a 401 or 403 to the gateway's own key.
	Rejected
	// ServerFailure: a 5xx, a connection failure, a timeout (Envoy's own 503 and 504 included).
	ServerFailure
)

// Policy is the timing the operator configured (plugin configuration "failover").
type Policy struct {
	// CircuitThreshold is how many consecutive server failures open a circuit.
	CircuitThreshold int
	// OpenMillis is how long a circuit first stays open; each reopening after a failed probe doubles it, up to
	// MaxBenchMillis.
	OpenMillis int64
	// ThrottleMillis is the bench after a 429 that says nothing of when to come back; it doubles with each
	// consecutive 429, up to MaxBenchMillis.
	ThrottleMillis int64
	// RejectedMillis is the bench of a key answered 401 or 403.
	RejectedMillis int64
	// MaxBenchMillis bounds every bench, whatever a provider's Retry-After says.
	MaxBenchMillis int64
	// ProbeMillis is how long one probe owns a half-open circuit; a probe whose answer never comes (its
	// client left) frees it when this runs out.
	ProbeMillis int64
}

// DefaultPolicy is the configuration's default.
var DefaultPolicy = Policy{CircuitThreshold: 5, OpenMillis: 30_000, ThrottleMillis: 1_000, RejectedMillis: 600_000,
	MaxBenchMillis: 3_600_000, ProbeMillis: 60_000}

// entry is a target's state, encoded in a fixed entrySize bytes.
type entry struct {
	benchedUntil int64 // unix ms; 0: not benched
	probeUntil   int64 // unix ms: a half-open circuit's probe owns it until then
	reason       Reason
	failures     uint16 // consecutive server failures
	backoff      uint8  // consecutive benches of the same kind, for the doubling
}

const (
	entryVersion = 1
	entrySize    = 1 + 8 + 8 + 1 + 2 + 1
	maxBackoff   = 30 // 2^30 times any base is past every MaxBenchMillis
)

func (e *entry) encode(b *[entrySize]byte) []byte {
	b[0] = entryVersion
	binary.LittleEndian.PutUint64(b[1:], uint64(e.benchedUntil))
	binary.LittleEndian.PutUint64(b[9:], uint64(e.probeUntil))
	b[17] = byte(e.reason)
	binary.LittleEndian.PutUint16(b[18:], e.failures)
	b[20] = e.backoff
	return b[:]
}

// decode reads an entry; anything not written by this version (another build sharing the vm_id during a
// rollout, a truncated value) reads as healthy, so no request is ever refused on a misread.
func decode(v []byte) entry {
	if len(v) != entrySize || v[0] != entryVersion {
		return entry{}
	}
	e := entry{
		benchedUntil: int64(binary.LittleEndian.Uint64(v[1:])),
		probeUntil:   int64(binary.LittleEndian.Uint64(v[9:])),
		reason:       Reason(v[17]),
		failures:     binary.LittleEndian.Uint16(v[18:]),
		backoff:      v[20],
	}
	if e.reason > Probing {
		return entry{}
	}
	return e
}

func (e entry) healthy() bool { return e == entry{} }

// Admission is the outcome of Admit.
type Admission struct {
	// Reason is Live when the target may be tried; otherwise why not.
	Reason Reason
	// Until is when a benched target may be tried again (unix ms; 0 when live).
	Until int64
	// Probe: the request was admitted as the one probe of a half-open circuit; its answer closes or reopens it.
	Probe bool
	// Clear: the entry read was all clear (no bench, no failure counted), so a success needs no write.
	Clear bool
}

// Tracker reads and writes the entries of one store.
type Tracker struct {
	Store  Store
	Policy Policy
	// Conflicts counts writes given up after maxCasTries lost races (a metric).
	Conflicts uint64
}

// maxCasTries bounds a write's compare-and-swap loop: under a storm of writers to one entry a worker gives up
// (the entry then holds another worker's close enough verdict) rather than spin.
const maxCasTries = 8

// Prepare creates the target's entry, healthy, unless some worker did: the filter prepares every configured
// target when it starts. Proxy-wasm's shared data ignores the cas of a write to a missing key, so two
// workers' first writes to one would race and one verdict would be lost; once the entry exists, every write
// compares.
func (t *Tracker) Prepare(key string) {
	if _, _, err := t.Store.Get(key); errors.Is(err, ErrNotFound) {
		var buf [entrySize]byte
		_ = t.Store.Set(key, (&entry{}).encode(&buf), 0)
	}
}

func (t *Tracker) read(key string) (entry, uint32, bool) {
	v, cas, err := t.Store.Get(key)
	if err != nil {
		return entry{}, 0, false
	}
	return decode(v), cas, true
}

// Admit decides whether a request may try the target now. A benched target is refused until its time; a
// circuit whose time is up is half-open: the first request to ask claims the probe (a compare-and-swap, so
// one worker wins), the others are refused until the probe's answer or its ProbeMillis.
func (t *Tracker) Admit(key string, now int64) Admission {
	return t.AdmitAt(key, func() int64 { return now })
}

// AdmitAt is Admit with the clock read only when the entry is not clear: a healthy target costs one read of
// the store and no clock.
func (t *Tracker) AdmitAt(key string, clock func() int64) Admission {
	now := int64(-1)
	for try := 0; try < maxCasTries; try++ {
		e, cas, found := t.read(key)
		if !found || e.healthy() {
			return Admission{Clear: true}
		}
		if now < 0 {
			now = clock()
		}
		if e.benchedUntil > now {
			return Admission{Reason: e.reason, Until: e.benchedUntil}
		}
		if e.reason != CircuitOpen && e.reason != Probing {
			// A bench whose time is up: live again; the entry is cleared by the next success.
			return Admission{}
		}
		if e.probeUntil > now {
			return Admission{Reason: Probing, Until: e.probeUntil}
		}
		claimed := e
		claimed.reason, claimed.probeUntil = Probing, now+t.Policy.ProbeMillis
		var buf [entrySize]byte
		err := t.Store.Set(key, claimed.encode(&buf), cas)
		if err == nil {
			return Admission{Probe: true}
		}
		if !errors.Is(err, ErrCasMismatch) {
			return Admission{} // an unwritable store never blocks traffic
		}
	}
	t.Conflicts++
	return Admission{Reason: Probing, Until: now + t.Policy.ProbeMillis}
}

// Release gives back a half-open circuit's probe claimed by a request that will bring no answer about the
// target (refused before it reached it whole, its client gone, or its answer about the client's own key):
// the next request may probe at once instead of every request being refused until ProbeMillis, which a
// client could otherwise renew at will with broken requests. Only a live claim is undone; a bench stands.
func (t *Tracker) Release(key string, now int64) {
	for try := 0; try < maxCasTries; try++ {
		e, cas, found := t.read(key)
		if !found || e.reason != Probing || e.probeUntil <= now {
			return
		}
		released := e
		released.reason, released.probeUntil = CircuitOpen, 0
		var buf [entrySize]byte
		err := t.Store.Set(key, released.encode(&buf), cas)
		if err == nil || !errors.Is(err, ErrCasMismatch) {
			return
		}
	}
	t.Conflicts++
}

// Until is when the target's bench ends (unix ms), 0 when it is not benched at now. It only reads.
func (t *Tracker) Until(key string, now int64) int64 {
	e, _, _ := t.read(key)
	if e.benchedUntil > now {
		return e.benchedUntil
	}
	return 0
}

// Change is what a Record changed, for the log and the metrics.
type Change uint8

const (
	Unchanged    Change = iota
	Benched             // a 429 or a rejected key benched the target
	Opened              // consecutive failures (or a failed probe) opened the circuit
	Closed              // a success closed an open or half-open circuit
	Cleared             // a success cleared a bench or a count of failures
	Counted             // a server failure was counted, the circuit stays closed
	lostTheRaces        // gave up after maxCasTries
)

// Outcome is the result of Record.
type Outcome struct {
	Change Change
	// Until is the bench's end after the change (unix ms), when Benched or Opened.
	Until int64
}

// Record writes what an answer said about the target. retryAfterMillis is the wait the answer asked for (a
// 429's headers: ParseRetryAfter), 0 for none. A bench never shortens: a target benched until a later
// moment by another worker's answer stays benched until then.
func (t *Tracker) Record(key string, f Failure, retryAfterMillis, now int64) Outcome {
	for try := 0; try < maxCasTries; try++ {
		e, cas, found := t.read(key)
		next, out := t.next(e, f, retryAfterMillis, now)
		if next == e {
			return Outcome{}
		}
		var buf [entrySize]byte
		value := next.encode(&buf)
		if !found {
			cas = 0
		}
		err := t.Store.Set(key, value, cas)
		if err == nil {
			return out
		}
		if !errors.Is(err, ErrCasMismatch) {
			return Outcome{}
		}
	}
	t.Conflicts++
	return Outcome{Change: lostTheRaces}
}

// next is the entry after an answer, and what changed.
func (t *Tracker) next(e entry, f Failure, retryAfterMillis, now int64) (entry, Outcome) {
	p := &t.Policy
	switch f {
	case Success:
		if e.healthy() {
			return e, Outcome{}
		}
		if e.reason == CircuitOpen || e.reason == Probing {
			if e.benchedUntil > now && e.reason == CircuitOpen {
				// An answer from a request let through before the circuit opened says nothing of now.
				return e, Outcome{}
			}
			return entry{}, Outcome{Change: Closed}
		}
		if e.benchedUntil > now {
			return e, Outcome{} // an earlier request's answer; the bench stands
		}
		return entry{}, Outcome{Change: Cleared}
	case Throttled:
		n := e
		if e.reason == RateLimited {
			n.backoff = min(e.backoff+1, maxBackoff)
		} else if e.reason == Live {
			n.backoff = 0
		}
		wait := retryAfterMillis
		if wait <= 0 {
			wait = doubled(p.ThrottleMillis, n.backoff)
		}
		until := now + min(wait, p.MaxBenchMillis)
		if until <= e.benchedUntil {
			return e, Outcome{} // already benched longer (LiteLLM #40130: never keep the shorter deadline)
		}
		switch e.reason {
		case Probing:
			// The probe's answer is a 429: the provider is up and throttling. The circuit closes into a bench for
			// as long as it asked, and clients are told 429, not 503.
			n.reason, n.probeUntil, n.failures = RateLimited, 0, 0
		case CircuitOpen, KeyRejected:
		default:
			n.reason = RateLimited
		}
		n.benchedUntil = until
		return n, Outcome{Change: Benched, Until: until}
	case Rejected:
		if p.RejectedMillis == 0 {
			return e, Outcome{} // the operator chose not to bench rejected keys
		}
		until := now + min(p.RejectedMillis, p.MaxBenchMillis)
		if until <= e.benchedUntil {
			return e, Outcome{}
		}
		n := e
		n.reason, n.benchedUntil = KeyRejected, until
		return n, Outcome{Change: Benched, Until: until}
	case ServerFailure:
		n := e
		switch {
		case e.reason == Probing:
			// The probe failed: open again, for twice as long.
			n.backoff = min(e.backoff+1, maxBackoff)
		case e.reason == CircuitOpen:
			return e, Outcome{} // a failure of a request let through before it opened
		default:
			if n.failures < 1<<16-1 {
				n.failures++
			}
			if int(n.failures) < p.CircuitThreshold {
				return n, Outcome{Change: Counted}
			}
			n.backoff = 0
		}
		until := now + min(doubled(p.OpenMillis, n.backoff), p.MaxBenchMillis)
		n.reason, n.benchedUntil, n.probeUntil, n.failures = CircuitOpen, max(until, e.benchedUntil), 0, 0
		return n, Outcome{Change: Opened, Until: n.benchedUntil}
	}
	return e, Outcome{}
}

func doubled(base int64, times uint8) int64 {
	for i := uint8(0); i < times && base < 1<<40; i++ {
		base *= 2
	}
	return base
}
