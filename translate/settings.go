package translate

import (
	"fmt"
	"strings"
)

// Dialect settings: the configuration keys that only some dialects take (a deployment, a chain, an
// extra-parameters policy...). The plugin decodes the keys every provider has and hands the others to
// translate as written (Setting); each dialect's file lists the keys it takes, with their checks and what
// they set (configKey), so a new dialect with a key of its own changes no code outside its file. The result
// is one comparable value that the plugin carries to every attempt without reading it.

// Setting is one dialect-specific configuration key as the operator wrote it.
type Setting struct{ Key, Value string }

// SettingLevel is where in the configuration a key is written.
type SettingLevel uint8

const (
	// GatewaySetting keys are top-level: they apply to every provider of the dialects that take them.
	GatewaySetting SettingLevel = iota
	// ProviderSetting keys are a provider entry's.
	ProviderSetting
	// ModelSetting keys are a models entry's.
	ModelSetting
)

func (l SettingLevel) entry() string {
	switch l {
	case GatewaySetting:
		return "top-level"
	case ProviderSetting:
		return "provider"
	}
	return "model"
}

// Settings are the dialect settings of one models entry: the gateway's, its provider's and its own, parsed
// and checked. The zero value is every dialect's defaults. Comparable with ==, so a cache keyed on a Target
// compares it whole.
type Settings struct {
	// deployment is the model entry's Azure deployment: the azure-openai path segment or v1 body model, or
	// the azure-ai azureml-model-deployment header.
	deployment string
	// chainID is the EternalAI model entry's pinned chain; defaultChainID the provider's.
	chainID, defaultChainID string
	// extraParameters is the azure-ai provider's policy for fields outside its known set.
	extraParameters extraParametersPolicy
	// entraToken: the azure-openai provider's key is an Entra token, sent as Authorization: Bearer.
	entraToken bool
	// onchain is what EternalAI's onchain_data becomes for clients of other dialects (the gateway's
	// onchain_data).
	onchain onchainPolicy
}

// SettingError is a dialect setting that was refused: the key, and what is wrong with its value.
type SettingError struct {
	Key string
	Err error
}

func (e *SettingError) Error() string { return e.Key + ": " + e.Err.Error() }

// IsSettingKey reports whether some dialect takes key at this level: the plugin hands such keys to
// translate instead of refusing them as unknown.
func IsSettingKey(level SettingLevel, key string) bool {
	for _, d := range Dialects {
		for _, k := range d.spec().keysAt(level) {
			if k.name == key {
				return true
			}
		}
	}
	return false
}

// SettingLevels lists the levels at which some dialect takes key (none for a key no dialect takes), so that
// a key written at the wrong level can be told where it belongs.
func SettingLevels(key string) []SettingLevel {
	var levels []SettingLevel
	for _, level := range [...]SettingLevel{GatewaySetting, ProviderSetting, ModelSetting} {
		if IsSettingKey(level, key) {
			levels = append(levels, level)
		}
	}
	return levels
}

// Entry names the level as the configuration's README does: "top-level", "provider" or "model".
func (l SettingLevel) Entry() string { return l.entry() }

// With returns the settings with the keys of one more level applied (the gateway's first, then a
// provider's, then a models entry's), each checked for the dialect: a key it does not take, or a value it
// refuses, is an error naming the key. At the gateway level d is DialectUnknown: a top-level key applies to
// every provider of the dialects that take it, so only its value is checked. An empty value is the key's
// default.
func (s Settings) With(d Dialect, level SettingLevel, keys []Setting) (Settings, *SettingError) {
	for _, kv := range keys {
		if kv.Value == "" {
			continue // written empty: the key's default, as when it is left out
		}
		k, err := findKey(d, level, kv)
		if err != nil {
			return s, &SettingError{Key: kv.Key, Err: err}
		}
		k.apply(&s, kv.Value)
	}
	return s, nil
}

// findKey is the row for a setting, its value checked: the dialect's own row, or at the gateway level any
// dialect's.
func findKey(d Dialect, level SettingLevel, kv Setting) (*configKey, error) {
	if level == GatewaySetting {
		for _, other := range Dialects {
			keys := other.spec().keysAt(level)
			for i := range keys {
				if keys[i].name == kv.Key {
					return &keys[i], keys[i].check(kv.Value)
				}
			}
		}
		return nil, fmt.Errorf("no dialect takes %s", kv.Key)
	}
	if s := d.spec(); s != nil {
		keys := s.keysAt(level)
		for i := range keys {
			if keys[i].name == kv.Key {
				return &keys[i], keys[i].check(kv.Value)
			}
		}
	}
	return nil, keyNotTaken(d, level, kv)
}

// keyNotTaken says which dialects take a key the provider's dialect does not.
func keyNotTaken(d Dialect, level SettingLevel, kv Setting) error {
	var takers []string
	known := false
	for _, other := range Dialects {
		for _, k := range other.spec().keysAt(level) {
			if k.name == kv.Key {
				known = true
				if k.check(kv.Value) == nil {
					takers = append(takers, other.String())
				}
			}
		}
	}
	switch {
	case len(takers) > 0:
		return fmt.Errorf("%q only applies to %s providers", kv.Value, strings.Join(takers, " and "))
	case known:
		return fmt.Errorf("%q is not a valid %s for any %s entry", kv.Value, kv.Key, level.entry())
	}
	return fmt.Errorf("no dialect takes %s in a %s entry", kv.Key, level.entry())
}

// keysAt is the dialect's configuration keys at a level.
func (s *dialectSpec) keysAt(level SettingLevel) []configKey {
	switch level {
	case GatewaySetting:
		return s.gatewayKeys
	case ProviderSetting:
		return s.providerKeys
	}
	return s.modelKeys
}
