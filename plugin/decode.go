package main

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/translate"
)

// The configuration is decoded with gjson rather than encoding/json: reflection-based decoding would add
// most of a MiB to the .wasm, and a hand-written reader names the exact path of an unknown or mistyped key.

func decodeRawConfig(root gjson.Result) (rawConfig, error) {
	var c rawConfig
	err := decodeObject("(root)", root, func(key, path string, v gjson.Result) error {
		switch key {
		case "providers":
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				p, err := decodeProvider(item, v)
				c.Providers = append(c.Providers, p)
				return err
			})
		case "consumers":
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				var rc rawConsumer
				err := decodeObject(item, v, func(key, path string, v gjson.Result) error {
					switch key {
					case "name":
						return decodeString(path, v, &rc.Name)
					case "key_sha256":
						return decodeString(path, v, &rc.KeySHA256)
					case "models":
						return decodeArray(path, v, func(item string, v gjson.Result) error {
							var m string
							err := decodeString(item, v, &m)
							rc.Models = append(rc.Models, m)
							return err
						})
					}
					return unknownKey(path)
				})
				c.Consumers = append(c.Consumers, rc)
				return err
			})
		case "default_provider":
			return decodeString(path, v, &c.DefaultProvider)
		case "routing_header":
			return decodeString(path, v, &c.RoutingHeader)
		case "path_prefix":
			return decodeString(path, v, &c.PathPrefix)
		case "max_request_bytes":
			return decodeInt(path, v, &c.MaxRequestBytes)
		case "max_event_bytes":
			return decodeInt(path, v, &c.MaxEventBytes)
		case "body_wait_seconds":
			return decodeInt(path, v, &c.BodyWaitSeconds)
		case "unknown_paths":
			return decodeString(path, v, &c.UnknownPaths)
		case "usage":
			return decodeString(path, v, &c.Usage)
		case "response_binding_key_env":
			return decodeString(path, v, &c.ResponseBindingKeyEnv)
		case "failover":
			return decodeFailover(path, v, &c.Failover)
		case "budgets":
			c.Budgets = &rawBudgets{}
			return decodeBudgets(path, v, c.Budgets)
		}
		return decodeSetting(translate.GatewaySetting, key, path, v, &c.Settings)
	})
	return c, err
}

func decodeProvider(field string, v gjson.Result) (rawProvider, error) {
	var p rawProvider
	err := decodeObject(field, v, func(key, path string, v gjson.Result) error {
		switch key {
		case "name":
			return decodeString(path, v, &p.Name)
		case "dialect":
			return decodeString(path, v, &p.Dialect)
		case "host":
			return decodeString(path, v, &p.Host)
		case "base_path":
			var s string
			err := decodeString(path, v, &s)
			p.BasePath = &s
			return err
		case "api_key":
			return decodeString(path, v, &p.APIKey)
		case "api_key_env":
			return decodeString(path, v, &p.APIKeyEnv)
		case "api_key_envs":
			p.APIKeyEnvs = []string{}
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				var name string
				err := decodeString(item, v, &name)
				p.APIKeyEnvs = append(p.APIKeyEnvs, name)
				return err
			})
		case "api_keys":
			p.APIKeys = []string{}
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				var key string
				err := decodeString(item, v, &key)
				p.APIKeys = append(p.APIKeys, key)
				return err
			})
		case "cluster":
			return decodeString(path, v, &p.Cluster)
		case "auth":
			return decodeString(path, v, &p.Auth)
		case "api_version":
			return decodeString(path, v, &p.APIVersion)
		case "hosted_tools":
			return decodeString(path, v, &p.HostedTools)
		case "models":
			return decodeArray(path, v, func(item string, v gjson.Result) error {
				var m rawModel
				err := decodeObject(item, v, func(key, path string, v gjson.Result) error {
					switch key {
					case "name":
						return decodeString(path, v, &m.Name)
					case "model":
						return decodeString(path, v, &m.Model)
					case "chat_only":
						return decodeBool(path, v, &m.ChatOnly)
					case "hosted_tools":
						return decodeString(path, v, &m.HostedTools)
					case "priority":
						return decodeInt(path, v, &m.Priority)
					case "weight":
						return decodeInt(path, v, &m.Weight)
					case "context_window":
						return decodeInt(path, v, &m.ContextWindow)
					}
					return decodeSetting(translate.ModelSetting, key, path, v, &m.Settings)
				})
				p.Models = append(p.Models, m)
				return err
			})
		}
		return decodeSetting(translate.ProviderSetting, key, path, v, &p.Settings)
	})
	return p, err
}

// decodeSetting keeps a key some dialect takes at this level (a string) for translate to check and apply, and
// refuses any other key as unknown.
func decodeSetting(level translate.SettingLevel, key, path string, v gjson.Result, settings *[]translate.Setting) error {
	if !translate.IsSettingKey(level, key) {
		if elsewhere := translate.SettingLevels(key); len(elsewhere) > 0 {
			// Spelled right, written in the wrong place: say where it goes.
			entries := make([]string, len(elsewhere))
			for i, l := range elsewhere {
				entries[i] = l.Entry()
			}
			return fieldErr(path, "is a %s key, not a %s one: move it there (README \"Configuration\")",
				strings.Join(entries, " or "), level.Entry())
		}
		return unknownKey(path)
	}
	var value string
	err := decodeString(path, v, &value)
	*settings = append(*settings, translate.Setting{Key: key, Value: value})
	return err
}

func unknownKey(path string) error {
	return fieldErr(path, "is not a known key: remove it or check its spelling against README \"Configuration\"")
}

// decodeObject calls set for each key of an object, refusing a key given twice.
func decodeObject(field string, v gjson.Result, set func(key, path string, v gjson.Result) error) error {
	if !v.IsObject() {
		return fieldErr(field, "must be a JSON object")
	}
	var err error
	seen := map[string]bool{}
	v.ForEach(func(k, val gjson.Result) bool {
		key := unquote(k)
		path := key
		if field != "(root)" {
			path = field + "." + key
		}
		if seen[key] {
			err = fieldErr(path, "is given twice")
			return false
		}
		seen[key] = true
		err = set(key, path, val)
		return err == nil
	})
	return err
}

func decodeArray(field string, v gjson.Result, item func(path string, v gjson.Result) error) error {
	if !v.IsArray() {
		return fieldErr(field, "must be a JSON array")
	}
	var err error
	i := 0
	v.ForEach(func(_, val gjson.Result) bool {
		err = item(fmt.Sprintf("%s[%d]", field, i), val)
		i++
		return err == nil
	})
	return err
}

func decodeString(field string, v gjson.Result, dst *string) error {
	if v.Type != gjson.String {
		return fieldErr(field, "must be a string")
	}
	*dst = unquote(v)
	return nil
}

// unquote is a string's value as the filter reads the names clients send (jsonscan.AppendUnquoted, which is
// encoding/json's reading): a model name or glob in the configuration means what the same text means in a
// request. gjson's own decoding differs after a lone surrogate.
func unquote(v gjson.Result) string {
	s, ok := jsonscan.AppendUnquoted(nil, []byte(v.Raw))
	if !ok { // the configuration was validated: unreachable
		return v.Str
	}
	return string(s)
}

func decodeBool(field string, v gjson.Result, dst *bool) error {
	if v.Type != gjson.True && v.Type != gjson.False {
		return fieldErr(field, "must be true or false")
	}
	*dst = v.Type == gjson.True
	return nil
}

func decodeInt(field string, v gjson.Result, dst **int) error {
	// The range is checked before converting: Go leaves an out-of-range float-to-int conversion to the
	// platform (amd64 and wasm differ), and check-config must say what Envoy says.
	const two63 = 9223372036854775808.0
	if v.Type != gjson.Number || v.Num < -two63 || v.Num > two63 || v.Num < two63 && v.Num != float64(int64(v.Num)) {
		return fieldErr(field, "must be an integer")
	}
	n := int(v.Int())
	if v.Num == two63 {
		n = 1<<63 - 1 // 2^63 and 2^63-1 read as the same float: the range check refuses both
	}
	*dst = &n
	return nil
}
