package translate

import (
	"strings"
	"unsafe"
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
		if index(b, s) >= 0 {
			return true
		}
	}
	return false
}

// index is bytes.Index(b, []byte(s)) without the conversion, which allocates for a key over 32 bytes; the
// string view of b is only read, during the call.
func index(b []byte, s string) int {
	return strings.Index(unsafe.String(unsafe.SliceData(b), len(b)), s)
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

// Redact returns b with every secret replaced by Redacted: b itself, not copied (and nothing allocated), when
// it holds none. b is never written to. Each secret, longest first, costs one forward pass over the text,
// which builds the output once whatever the number of occurrences.
func (r *Redactor) Redact(b []byte) []byte {
	out := b
	for _, s := range r.secrets {
		i := index(out, s)
		if i < 0 {
			continue
		}
		w := make([]byte, 0, len(out)+len(Redacted)-len(s)) // one occurrence fits; more grow it by doubling
		from := 0
		for i >= 0 {
			w = append(append(w, out[from:from+i]...), Redacted...)
			from += i + len(s) // past the occurrence: a replacement is never searched again for this secret
			i = index(out[from:], s)
		}
		out = append(w, out[from:]...)
	}
	return out
}
