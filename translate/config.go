package translate

import (
	"fmt"
	"strings"
)

// configKey is a configuration key that only some dialects take (settings.go); the dialect that lists it
// owns its check and what it sets (Higress-style: a provider's rules and its settings live in one file).
type configKey struct {
	name string
	// check judges a value as written.
	check func(value string) error
	// apply sets what the checked value means.
	apply func(s *Settings, value string)
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
var deploymentKey = configKey{name: "deployment",
	check: func(v string) error {
		if !ValidDeployment(v) {
			return fmt.Errorf("%q must be 1-64 characters of A-Z a-z 0-9 . _ -", v)
		}
		return nil
	},
	apply: func(s *Settings, v string) { s.deployment = v },
}
