package health

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

var testPolicy = Policy{CircuitThreshold: 3, OpenMillis: 1000, ThrottleMillis: 100, RejectedMillis: 60_000,
	MaxBenchMillis: 10_000, ProbeMillis: 500}

// step is one event in a target's life: an admission asked at a time, or an answer recorded.
type step struct {
	at         int64
	admit      bool
	release    bool // Release: the probe's request brought no answer
	record     Failure
	retryAfter int64
	// what the step must give
	wantReason Reason
	wantUntil  int64
	wantProbe  bool
	wantChange Change
}

func TestTrackerSequences(t *testing.T) {
	admit := func(at int64, r Reason, until int64) step {
		return step{at: at, admit: true, wantReason: r, wantUntil: until}
	}
	probe := func(at int64) step { return step{at: at, admit: true, wantProbe: true} }
	release := func(at int64) step { return step{at: at, release: true} }
	rec := func(at int64, f Failure, retryAfter int64, c Change) step {
		return step{at: at, record: f, retryAfter: retryAfter, wantChange: c}
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"healthy target stays live and unwritten", []step{
			admit(0, Live, 0), rec(1, Success, 0, Unchanged), admit(2, Live, 0)}},
		{"429 with Retry-After benches until then, forgotten at expiry", []step{
			rec(0, Throttled, 2000, Benched), admit(1999, RateLimited, 2000), admit(2000, Live, 0),
			rec(2001, Success, 0, Cleared), admit(2002, Live, 0)}},
		{"429 without a wait backs off exponentially", []step{
			rec(0, Throttled, 0, Benched), admit(99, RateLimited, 100),
			rec(100, Throttled, 0, Benched), admit(100, RateLimited, 300),
			rec(300, Throttled, 0, Benched), admit(300, RateLimited, 700)}},
		{"a shorter Retry-After never shortens a longer bench", []step{
			rec(0, Throttled, 5000, Benched), rec(10, Throttled, 100, Unchanged), admit(4999, RateLimited, 5000)}},
		{"a huge Retry-After is bounded by max_bench", []step{
			rec(0, Throttled, 1<<50, Benched), admit(1, RateLimited, 10_000), admit(10_000, Live, 0)}},
		{"401 benches the key for long", []step{
			rec(0, Rejected, 0, Benched), admit(9_999, KeyRejected, 10_000)}},
		{"failures below the threshold are counted, a success clears them", []step{
			rec(0, ServerFailure, 0, Counted), rec(1, ServerFailure, 0, Counted), admit(2, Live, 0),
			rec(3, Success, 0, Cleared), rec(4, ServerFailure, 0, Counted), rec(5, ServerFailure, 0, Counted),
			admit(6, Live, 0)}},
		{"the threshold opens the circuit; one probe half-opens it; its success closes it", []step{
			rec(0, ServerFailure, 0, Counted), rec(1, ServerFailure, 0, Counted), rec(2, ServerFailure, 0, Opened),
			admit(3, CircuitOpen, 1002), admit(1001, CircuitOpen, 1002),
			probe(1002), admit(1003, Probing, 1502), admit(1100, Probing, 1502),
			rec(1200, Success, 0, Closed), admit(1201, Live, 0)}},
		{"a failed probe reopens for twice as long", []step{
			rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Opened),
			probe(1000), rec(1100, ServerFailure, 0, Opened), admit(1101, CircuitOpen, 3100),
			probe(3100), rec(3200, ServerFailure, 0, Opened), admit(3201, CircuitOpen, 7200)}},
		{"a probe answered 429 closes the circuit into a bench for as long as it asked", []step{
			rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Opened),
			probe(1000), rec(1100, Throttled, 200, Benched), admit(1299, RateLimited, 1300), admit(1300, Live, 0)}},
		{"a probe that never answers frees the circuit after probe_timeout", []step{
			rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Opened),
			probe(1000), admit(1499, Probing, 1500), probe(1500)}},
		{"a probe released without an answer lets the next request probe at once", []step{
			rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Opened),
			probe(1000), admit(1001, Probing, 1500), release(1002), probe(1003), rec(1100, Success, 0, Closed)}},
		{"a release changes no bench, no open circuit and no expired claim", []step{
			rec(0, Throttled, 2000, Benched), release(1), admit(2, RateLimited, 2000),
			rec(2000, ServerFailure, 0, Counted), rec(2000, ServerFailure, 0, Counted), rec(2000, ServerFailure, 0, Opened),
			release(2001), admit(2002, CircuitOpen, 3000),
			probe(3000), release(3600), probe(3601)}},
		{"failures of requests let through before the circuit opened change nothing", []step{
			rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Counted), rec(0, ServerFailure, 0, Opened),
			rec(1, ServerFailure, 0, Unchanged), rec(2, Success, 0, Unchanged), admit(3, CircuitOpen, 1000)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &Tracker{Store: &MemStore{}, Policy: testPolicy}
			for i, s := range c.steps {
				if s.release {
					tr.Release("p", s.at)
					continue
				}
				if s.admit {
					a := tr.Admit("p", s.at)
					if a.Reason != s.wantReason || a.Until != s.wantUntil || a.Probe != s.wantProbe {
						t.Fatalf("step %d: Admit at %d = %+v, want reason %v until %d probe %v", i, s.at, a, s.wantReason, s.wantUntil, s.wantProbe)
					}
					continue
				}
				o := tr.Record("p", s.record, s.retryAfter, s.at)
				if o.Change != s.wantChange {
					t.Fatalf("step %d: Record(%v) at %d changed %v, want %v", i, s.record, s.at, o.Change, s.wantChange)
				}
			}
		})
	}
}

// Two workers share the store: one's write lands between the other's read and write. The loser reads again
// and neither verdict is lost.
func TestTrackerWorkersRace(t *testing.T) {
	store := &MemStore{}
	a := &Tracker{Store: store, Policy: testPolicy}
	b := &Tracker{Store: store, Policy: testPolicy}
	a.Prepare("p")
	b.Prepare("p")
	raced := 0
	store.BeforeSet = func(key string) {
		if raced == 0 {
			raced++
			b.Record(key, Throttled, 5000, 0) // worker b benches for 5 s meanwhile
		}
	}
	a.Record("p", ServerFailure, 0, 0) // worker a counts a failure; its first write loses the race
	store.BeforeSet = nil
	if got := a.Admit("p", 4999); got.Reason != RateLimited || got.Until != 5000 {
		t.Fatalf("after the race the bench is %+v, want rate_limited until 5000 (b's write lost)", got)
	}
	e, _, _ := a.read("p")
	if e.failures != 1 {
		t.Fatalf("a's failure count is %d, want 1 (a's write lost)", e.failures)
	}

	// Only one of two workers asking at once wins the probe of a half-open circuit.
	store2 := &MemStore{}
	a.Store, b.Store = store2, store2
	a.Prepare("q")
	for range 3 {
		a.Record("q", ServerFailure, 0, 0)
	}
	var bAdmission Admission
	store2.BeforeSet = func(key string) { bAdmission = b.Admit(key, 1000) }
	aAdmission := a.Admit("q", 1000)
	if !bAdmission.Probe || aAdmission.Probe || aAdmission.Reason != Probing {
		t.Fatalf("a got %+v, b got %+v: exactly one probe, b's (it wrote first)", aAdmission, bAdmission)
	}
}

// A store that always loses the race makes a bounded number of tries, and admits rather than blocks.
func TestTrackerGivesUp(t *testing.T) {
	store := &MemStore{}
	tr := &Tracker{Store: store, Policy: testPolicy}
	tr.Record("p", ServerFailure, 0, 0)
	writes := 0
	store.BeforeSet = func(key string) {
		writes++
		store.Set(key, []byte("x"), 0) // another worker writes every time
	}
	o := tr.Record("p", ServerFailure, 0, 0)
	if writes != maxCasTries || o.Change != lostTheRaces || tr.Conflicts != 1 {
		t.Fatalf("%d tries, change %v, conflicts %d; want %d tries, gave up, 1 conflict", writes, o.Change, tr.Conflicts, maxCasTries)
	}
}

// Values another build wrote (or garbage) read as healthy: a misread never refuses traffic.
func TestDecodeForeignValues(t *testing.T) {
	for _, v := range []string{"", "x", strings.Repeat("\xff", entrySize), "\x02" + strings.Repeat("\x00", entrySize-1),
		"\x01" + strings.Repeat("\xff", entrySize-1)} {
		if e := decode([]byte(v)); !e.healthy() {
			t.Errorf("decode(%q) = %+v, want healthy", v, e)
		}
	}
	want := entry{benchedUntil: 123, probeUntil: 456, reason: CircuitOpen, failures: 7, backoff: 2}
	var buf [entrySize]byte
	if got := decode(want.encode(&buf)); got != want {
		t.Fatalf("round trip %+v, want %+v", got, want)
	}
}

func TestRetryAfterMillis(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		headers map[string]string
		want    int64
	}{
		{map[string]string{}, 0},
		{map[string]string{"retry-after": "7"}, 7000},
		{map[string]string{"retry-after": "1.5"}, 1500},
		{map[string]string{"retry-after-ms": "250", "retry-after": "7"}, 250},
		{map[string]string{"retry-after-ms": "250.2"}, 251},
		{map[string]string{"retry-after": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90_000},
		{map[string]string{"retry-after": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, 360_000},
		{map[string]string{"x-ratelimit-reset-tokens": "20ms"}, 20},
		{map[string]string{"x-ratelimit-reset-requests": "12"}, 12_000},
		// hostile and malformed
		{map[string]string{"retry-after": "-5"}, 0},
		{map[string]string{"retry-after": "soon"}, 0},
		{map[string]string{"retry-after": "1e9"}, 0},
		{map[string]string{"retry-after": strings.Repeat("9", 40)}, 1 << 50},
		{map[string]string{"retry-after": strings.Repeat("9", 100000)}, 0},
		{map[string]string{"retry-after-ms": "NaN", "retry-after": "3"}, 3000},
		{map[string]string{"x-ratelimit-reset-tokens": "99999999999h"}, 0},
		{map[string]string{"retry-after": "3."}, 0},
	}
	for _, c := range cases {
		got := RetryAfterMillis(func(name string) string { return c.headers[name] }, now)
		if got != c.want {
			t.Errorf("RetryAfterMillis(%.80v) = %d, want %d", c.headers, got, c.want)
		}
	}
}
