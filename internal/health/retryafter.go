package health

import "time"

// maxHeaderValue bounds the header values read for a wait: anything longer is malformed (a hostile upstream
// gets no pass over megabytes of header).
const maxHeaderValue = 64

// RetryAfterMillis reads how long a throttled provider asked to be left alone, in milliseconds from now, from
// the headers of its 429: retry-after-ms (OpenAI, Azure), else Retry-After (seconds or an HTTP date), else
// the later of x-ratelimit-reset-requests and x-ratelimit-reset-tokens (durations like "1s", "6m0s",
// "20ms"). 0 when none says anything readable: the caller then backs off on its own. The result may be
// huge; the caller bounds it (Policy.MaxBenchMillis).
func RetryAfterMillis(header func(name string) string, now time.Time) int64 {
	if ms, ok := parseMillis(header("retry-after-ms")); ok {
		return ms
	}
	if v := header("retry-after"); v != "" {
		if s, ok := parseSeconds(v); ok {
			return s
		}
		if len(v) <= maxHeaderValue {
			if at, err := time.Parse(time.RFC1123, v); err == nil {
				if d := at.Sub(now).Milliseconds(); d > 0 {
					return d
				}
				return 0
			}
		}
	}
	return max(parseReset(header("x-ratelimit-reset-requests")), parseReset(header("x-ratelimit-reset-tokens")))
}

// parseMillis reads a non-negative decimal number of milliseconds ("1500", "1500.5"), rounded up.
func parseMillis(v string) (int64, bool) {
	whole, frac, ok := decimal(v)
	if !ok {
		return 0, false
	}
	if frac > 0 {
		whole++
	}
	return whole, true
}

// parseSeconds reads Retry-After's delay-seconds (a non-negative integer; a fraction is tolerated, as some
// providers send one), in milliseconds.
func parseSeconds(v string) (int64, bool) {
	whole, frac, ok := decimal(v)
	if !ok {
		return 0, false
	}
	return saturatingMul(whole, 1000) + frac, true
}

// decimal reads "digits[.digits]": the whole part (saturated) and the first three fraction digits as
// thousandths.
func decimal(v string) (whole, thousandths int64, ok bool) {
	if v == "" || len(v) > maxHeaderValue {
		return 0, 0, false
	}
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		whole = saturatingMul(whole, 10) + int64(v[i]-'0')
	}
	if i == 0 {
		return 0, 0, false
	}
	if i < len(v) && v[i] == '.' {
		i++
		start := i
		scale := int64(100)
		for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
			thousandths += int64(v[i]-'0') * scale
			scale /= 10
		}
		if i == start {
			return 0, 0, false
		}
	}
	return whole, thousandths, i == len(v)
}

// saturatingMul keeps a hostile number of digits from wrapping into a small or negative wait.
func saturatingMul(a, b int64) int64 {
	const limit = 1 << 50
	if a > limit/b {
		return limit
	}
	return a * b
}

// parseReset reads an x-ratelimit-reset-* duration ("1s", "6m0s", "20ms", "1h2m3.5s"); 0 when unreadable.
func parseReset(v string) int64 {
	if v == "" || len(v) > maxHeaderValue {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return (d + time.Millisecond - 1).Milliseconds()
	}
	// Some providers send bare seconds.
	if s, ok := parseSeconds(v); ok {
		return s
	}
	return 0
}
