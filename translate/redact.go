package translate

import (
	"bytes"
	"strings"
)

// Redacted is what a provider key becomes in bytes bound for a client.
const Redacted = "[redacted]"

// MinRedactedKeyBytes is the shortest key a Redactor looks for: a shorter string would match ordinary text
// and corrupt answers, and is no credential worth the name. Keys are compared as written; a key that only
// appears JSON-escaped (a '/' written "\/") is not found.
const MinRedactedKeyBytes = 8

// Redactor removes configured secrets (provider keys) from what reaches a client: an upstream may echo the
// request's api-key or Authorization header in an error message, a debug field or a response header.
//
// Replacement is hand-written rather than bytes.ReplaceAll, which would cost the .wasm size budget several
// KiB for a path almost never taken.
type Redactor struct {
	secrets []string // longest first, so a key that contains another is replaced whole
}

// NewRedactor prepares a redactor for the given secrets; empty, short and repeated ones are skipped.
func NewRedactor(secrets ...string) Redactor {
	var r Redactor
	for _, s := range secrets {
		if len(s) < MinRedactedKeyBytes || hasString(r.secrets, s) {
			continue
		}
		i := len(r.secrets) // insertion keeps the longest first
		for i > 0 && len(r.secrets[i-1]) < len(s) {
			i--
		}
		r.secrets = append(r.secrets, "")
		copy(r.secrets[i+1:], r.secrets[i:])
		r.secrets[i] = s
	}
	return r
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Empty reports whether there is nothing to look for.
func (r *Redactor) Empty() bool { return len(r.secrets) == 0 }

// Found reports whether b contains a secret.
func (r *Redactor) Found(b []byte) bool {
	for _, s := range r.secrets {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// FoundString reports whether s contains a secret.
func (r *Redactor) FoundString(s string) bool {
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			return true
		}
	}
	return false
}

// Redact returns b with every secret replaced by Redacted: b itself, not copied, when it holds none.
func (r *Redactor) Redact(b []byte) []byte {
	if !r.Found(b) {
		return b
	}
	out := b
	for _, s := range r.secrets {
		for from := 0; ; {
			i := bytes.Index(out[from:], []byte(s))
			if i < 0 {
				break
			}
			i += from
			// out[:i:i] makes append copy: b is never written to.
			out = append(append(out[:i:i], Redacted...), out[i+len(s):]...)
			from = i + len(Redacted) // past the replacement, which may itself contain a (silly) key
		}
	}
	return out
}
