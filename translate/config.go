package translate

import (
	"fmt"
	"strings"
)

// configKey is a provider or model configuration key that only some dialects take; the dialect that lists
// it owns its check (Higress-style: a provider's rules and its settings' checks live in one file).
type configKey struct {
	name string
	// check judges a non-empty value.
	check func(value string) error
}

// CheckProviderKey checks a provider entry's dialect-specific key: one its dialect takes, with a valid value.
// The plugin asks for every such key that is set (auth only when it is not passthrough), so no key is
// silently ignored.
func CheckProviderKey(d Dialect, key, value string) error {
	return checkKey(d, key, value, "provider", func(s *dialectSpec) []configKey { return s.providerKeys })
}

// CheckModelKey checks a model entry's dialect-specific key, as CheckProviderKey.
func CheckModelKey(d Dialect, key, value string) error {
	return checkKey(d, key, value, "model", func(s *dialectSpec) []configKey { return s.modelKeys })
}

func checkKey(d Dialect, key, value, entry string, keys func(*dialectSpec) []configKey) error {
	if s := d.spec(); s != nil {
		for _, k := range keys(s) {
			if k.name == key {
				return k.check(value)
			}
		}
	}
	var takers []string
	for _, other := range Dialects {
		for _, k := range keys(other.spec()) {
			if k.name == key && k.check(value) == nil {
				takers = append(takers, other.String())
			}
		}
	}
	if len(takers) == 0 {
		for _, other := range Dialects {
			for _, k := range keys(other.spec()) {
				if k.name == key {
					return fmt.Errorf("%q is not a valid %s for any %s entry", value, key, entry)
				}
			}
		}
		return fmt.Errorf("no dialect takes %s in a %s entry", key, entry)
	}
	return fmt.Errorf("%q only applies to %s providers", value, strings.Join(takers, " and "))
}

// checkOneOf accepts one of the listed values.
func checkOneOf(v string, values ...string) error {
	if inList(values, v) {
		return nil
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(values, ", "))
}

// deploymentKey is a model entry's deployment name (Azure dialects), which becomes a path segment or a
// header value.
var deploymentKey = configKey{name: "deployment", check: func(v string) error {
	if !ValidDeployment(v) {
		return fmt.Errorf("%q must be 1-64 characters of A-Z a-z 0-9 . _ -", v)
	}
	return nil
}}
