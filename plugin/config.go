package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/redact"
	"github.com/aidialect/aidialect/internal/sse"
	"github.com/aidialect/aidialect/translate"
)

// rawConfig is the plugin configuration as written (README "Configuration"). Unknown keys are an
// error: a misspelt key silently ignored is a gateway that routes wrong.
type rawConfig struct {
	Providers       []rawProvider
	DefaultProvider string
	Consumers       []rawConsumer
	RoutingHeader   string
	PathPrefix      string
	MaxRequestBytes *int
	MaxEventBytes   *int
	BodyWaitSeconds *int
	UnknownPaths    string
	Usage           string
	// ResponseBindingKeyEnv names the variable holding the key response ids are bound to consumers with
	// (translate/binding.go); without it, each provider's own key is used.
	ResponseBindingKeyEnv string
	// Settings are the top-level keys some dialect takes (onchain_data), for translate to check and apply.
	Settings []translate.Setting
	// Failover is the "failover" object: attempts, health timings, streams (failover.go).
	Failover rawFailover
	Budgets  *rawBudgets
}

type rawProvider struct {
	Name      string
	Dialect   string
	Host      string
	BasePath  *string
	APIKey    string
	APIKeyEnv string
	// APIKeyEnvs is the list form: several keys of one account, chosen per attempt among the live ones.
	APIKeyEnvs []string
	// APIKeys is api_key's list form (for development: keys belong in the environment).
	APIKeys []string
	// Cluster is the Envoy cluster a failover attempt is sent to by an HTTP callout (default: the name).
	Cluster     string
	Auth        string
	APIVersion  string
	HostedTools string
	Models      []rawModel
	// Settings are the provider's keys that only some dialects take (extra_parameters, chain_id...), for
	// translate to check and apply.
	Settings []translate.Setting
}

type rawModel struct {
	Name        string
	Model       string
	ChatOnly    bool
	HostedTools string
	// Priority orders the providers of one model name (lower first); Weight shares requests among those of
	// one priority.
	Priority, Weight *int
	// ContextWindow is the model's context window in tokens: a context-length error fails over only toward
	// a candidate that declares a larger one.
	ContextWindow *int
	// Settings are the entry's keys that only some dialects take (deployment, chain_id...).
	Settings []translate.Setting
}

type rawConsumer struct {
	Name      string
	KeySHA256 string
	Models    []string
}

// Defaults for the top-level settings.
const (
	defaultRoutingHeader   = "x-aidialect-provider"
	defaultMaxRequestBytes = 8 << 20
	defaultBodyWaitSeconds = 10
	maxMaxRequestBytes     = 256 << 20
)

// config is the validated configuration the filter runs on.
type config struct {
	providers       []*provider
	byName          map[string]*provider
	exact           map[string][]modelRoute // exact model names, over all providers: each name's candidates, by priority
	globs           []modelRoute            // glob entries in configuration order (one candidate each)
	modelNames      map[string][]string     // provider name -> its exact model names, for GET /v1/models
	defaultRoute    []modelRoute            // default_provider, for models no entry matches (nil: none)
	consumers       []consumer
	metricTargets   []metricTarget // token metrics: one per models entry, plus the default route
	routingHeader   string
	pathPrefix      string
	maxRequestBytes int
	maxEventBytes   int
	// bodyWaitSeconds is how long a request paused for its body may see none before the filter answers it
	// (0: never).
	bodyWaitSeconds int
	// settings are the top-level dialect settings, under every provider's.
	settings      translate.Settings
	rejectUnknown bool
	forceUsage    bool
	// secrets finds the provider keys in what goes back to clients (an upstream may echo them).
	secrets  redact.Set
	failover failoverConfig
	budgets  budgetConfig
}

// metricTarget is the label pair of one token metric.
type metricTarget struct{ provider, label string }

type provider struct {
	index    int // position in config.providers, for metric tables
	name     string
	dialect  translate.Dialect
	host     string
	basePath string
	// key is the provider credential (the first of keys); empty with passthrough, which forwards the client's
	// own key.
	key string
	// keys are the provider's credentials (api_key_envs: several), each with its health entry; one with
	// api_key or api_key_env, none with passthrough.
	keys []providerKey
	// cluster is the Envoy cluster failover callouts go to; healthKey the provider's entry in shared data.
	cluster, healthKey string
	passthrough        bool
	apiVersion         string
	// settings are the gateway's and the provider's dialect settings, under each models entry's.
	settings translate.Settings
	// hostedTools is the provider's hosted_tools ("" when unset): its model entries' default.
	hostedTools string
	// bindingKey binds the Responses ids this provider stores to the consumer they were handed to; nil
	// without consumers.
	bindingKey *translate.BindingKey
}

// modelRoute is one models entry: which provider serves the names it matches, and how.
type modelRoute struct {
	provider *provider
	pattern  glob
	label    string // bounded metric label: the configured name
	metricID int    // index into config.metricTargets
	model    string
	// settings are the entry's dialect settings (the gateway's and its provider's under its own).
	settings translate.Settings
	// chatOnly: the model has only Chat Completions; Responses requests to it are bridged to chat.
	chatOnly bool
	// dropHostedTools: bridged Responses requests leave hosted tools out (hosted_tools "drop").
	dropHostedTools bool
	// head remembers the entry's last rendered request line; shared by the copies resolve returns.
	head *translate.HeadCache
	// priority and weight place the entry among the candidates of its model name (failover.go).
	priority, weight int
	// contextWindow is the declared context window in tokens (0: not declared).
	contextWindow int
}

type consumer struct {
	name   string
	keySum [32]byte
	models []glob
}

// Shape checks for configured names. Hand-written rather than regexp: the package would add hundreds of
// KiB to the .wasm for five patterns.

// isLowerName: [a-z0-9][a-z0-9-]* (provider names, header names).
func isLowerName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	return allBytes(s, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' })
}

// isHost: a DNS name or address with an optional port, no scheme, path or spaces.
func isHost(s string) bool {
	name, port, hasPort := strings.Cut(s, ":")
	if hasPort && (port == "" || len(port) > 5 || !allBytes(port, isDigit)) {
		return false
	}
	if name == "" || name[0] == '.' || name[0] == '-' || name[len(name)-1] == '.' || name[len(name)-1] == '-' {
		return false
	}
	return allBytes(name, func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '.' || c == '-'
	})
}

// isBasePath: empty, or "/seg" segments of unreserved URL characters.
func isBasePath(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != '/' || strings.HasSuffix(s, "/") || strings.Contains(s, "//") {
		return false
	}
	return allBytes(s, func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || strings.IndexByte("/._~-", c) >= 0
	})
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// configError is a configuration problem: the field's path, and what to do about it. provider names the
// provider a models entry belongs to (the path alone only counts).
type configError struct {
	field, problem, provider string
}

func (e *configError) Error() string {
	if e.provider != "" {
		return "configuration " + e.field + " (provider " + e.provider + "): " + e.problem
	}
	return "configuration " + e.field + ": " + e.problem
}

// withProviderName names the provider in an error the decoder found inside providers[i], when its name was
// read before the mistake.
func withProviderName(err error, providers []rawProvider) error {
	ce, ok := err.(*configError)
	if !ok || !strings.HasPrefix(ce.field, "providers[") {
		return err
	}
	end := strings.IndexByte(ce.field, ']')
	if end < 0 {
		return err
	}
	i, _ := strconv.Atoi(ce.field[len("providers["):end])
	if i < len(providers) && providers[i].Name != "" {
		return ofProvider(err, providers[i].Name)
	}
	return err
}

// ofProvider names the provider in a models entry's error. (A type assertion, not errors.As: the errors
// here are never wrapped, and errors.As would add some 50 KB of reflection to the module.)
func ofProvider(err error, name string) error {
	if ce, ok := err.(*configError); ok && ce.provider == "" {
		ce.provider = name
	}
	return err
}

func fieldErr(field, format string, args ...any) error {
	return &configError{field: field, problem: fmt.Sprintf(format, args...)}
}

// envSource says where api_key_env variables are read from, so that the advice for a missing one fits.
type envSource int

const (
	envFromVM    envSource = iota // inside Envoy: the VM environment, filled from vm_config.environment_variables
	envFromShell                  // check-config on the command line: the environment of the shell running it
)

// parseConfig reads and validates the plugin configuration; getenv resolves api_key_env (os.Getenv in the
// VM, whose environment Envoy fills from vm_config.environment_variables).
func parseConfig(data []byte, getenv func(string) string) (*config, error) {
	return parseConfigFrom(data, getenv, envFromVM)
}

// parseConfigFrom is parseConfig with the origin of the api_key_env variables named for the advice.
func parseConfigFrom(data []byte, getenv func(string) string, env envSource) (*config, error) {
	if off, err := jsonscan.Check(data); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return nil, fieldErr("(root)", "is not valid JSON: %s", describeJSONError(data, off, err))
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fieldErr("(root)", "is empty: give at least one provider, see README \"Configuration\"")
	}
	raw, err := decodeRawConfig(gjson.ParseBytes(data))
	if err != nil {
		return nil, withProviderName(err, raw.Providers)
	}
	c := &config{
		byName:          map[string]*provider{},
		modelNames:      map[string][]string{},
		exact:           map[string][]modelRoute{},
		routingHeader:   orDefault(raw.RoutingHeader, defaultRoutingHeader),
		pathPrefix:      raw.PathPrefix,
		maxRequestBytes: defaultMaxRequestBytes,
		maxEventBytes:   sse.DefaultMaxEventBytes,
		bodyWaitSeconds: defaultBodyWaitSeconds,
	}
	if len(raw.Providers) == 0 {
		return nil, fieldErr("providers", "is empty: configure at least one provider")
	}
	var serr *translate.SettingError
	if c.settings, serr = (translate.Settings{}).With(translate.DialectUnknown, translate.GatewaySetting, raw.Settings); serr != nil {
		return nil, settingErr("", serr)
	}
	for i, rp := range raw.Providers {
		p, err := parseProvider(fmt.Sprintf("providers[%d]", i), rp, c.settings, getenv, env)
		if err != nil {
			return nil, err
		}
		if _, dup := c.byName[p.name]; dup {
			return nil, fieldErr(fmt.Sprintf("providers[%d].name", i), "%q is used twice: provider names must be unique", p.name)
		}
		p.index = len(c.providers)
		c.byName[p.name] = p
		c.providers = append(c.providers, p)
		for j, rm := range rp.Models {
			field := fmt.Sprintf("providers[%d].models[%d]", i, j)
			route, err := parseModel(field, rm, p)
			if err != nil {
				return nil, ofProvider(err, p.name)
			}
			if route.pattern.literal() && slices.ContainsFunc(c.exact[rm.Name], func(r modelRoute) bool { return r.provider == p }) {
				// Checked before the metric labels, which a repeated name also repeats: this says what to fix.
				return nil, ofProvider(fieldErr(field+".name", "%q is listed twice for this provider: a model name appears once per provider (several providers may serve it, tried in order of priority)", rm.Name), p.name)
			}
			if k := slices.Index(c.metricTargets, metricTarget{p.name, route.label}); k >= 0 {
				// One counter would sum both entries' tokens, and neither count would be right.
				return nil, ofProvider(fieldErr(field+".name", "%q gives the same metric label %q as another of this provider's models: labels keep A-Z a-z 0-9 - _, write other bytes as _ and * as any; rename one of them", rm.Name, route.label), p.name)
			}
			route.metricID = len(c.metricTargets)
			c.metricTargets = append(c.metricTargets, metricTarget{p.name, route.label})
			if route.pattern.literal() {
				prev := c.exact[rm.Name]
				if len(prev) == maxCandidates {
					return nil, ofProvider(fieldErr(field+".name", "%q is served by more than %d providers: a request tries at most that many", rm.Name, maxCandidates), p.name)
				}
				if len(prev) == 0 {
					c.modelNames[p.name] = append(c.modelNames[p.name], rm.Name)
				}
				c.exact[rm.Name] = append(prev, route)
			} else {
				if route.priority != 0 || route.weight != 1 || route.contextWindow != 0 {
					return nil, ofProvider(fieldErr(field, "priority, weight and context_window order the providers of one exact model name; %q is a pattern, matched by one entry: remove them", rm.Name), p.name)
				}
				c.globs = append(c.globs, route)
			}
		}
	}
	for _, candidates := range c.exact {
		// Stable: providers of one priority keep the configuration's order.
		slices.SortStableFunc(candidates, func(a, b modelRoute) int { return a.priority - b.priority })
	}
	if c.budgets, err = parseBudgets(raw.Budgets); err != nil {
		return nil, err
	}
	if c.failover, err = parseFailover(raw.Failover); err != nil {
		return nil, err
	}
	if raw.DefaultProvider != "" {
		p, ok := c.byName[raw.DefaultProvider]
		if !ok {
			return nil, fieldErr("default_provider", "names %q, which is not a configured provider", raw.DefaultProvider)
		}
		if slices.Contains(c.metricTargets, metricTarget{p.name, defaultLabel}) {
			return nil, fieldErr("default_provider", "provider %q has a model whose metric label is %q, the default route's: rename that model entry", p.name, defaultLabel)
		}
		c.defaultRoute = []modelRoute{{provider: p, label: defaultLabel, metricID: len(c.metricTargets), settings: p.settings,
			head: &translate.HeadCache{}, weight: 1}}
		c.metricTargets = append(c.metricTargets, metricTarget{p.name, defaultLabel})
	}
	if len(raw.Consumers) > 0 {
		for _, p := range c.providers {
			if p.passthrough {
				return nil, fieldErr("consumers", "cannot be combined with provider %q's \"auth\": \"passthrough\": consumers send gateway keys, which passthrough would forward to the provider; give that provider api_key_env instead, or remove consumers", p.name)
			}
		}
	}
	consumerAt := make(map[string]int, len(raw.Consumers))
	for i, rc := range raw.Consumers {
		cons, err := parseConsumer(fmt.Sprintf("consumers[%d]", i), rc)
		if err != nil {
			return nil, err
		}
		// The name is the consumer's identity for the responses it stores (translate/binding.go): two
		// consumers of one name would continue each other's.
		if j, dup := consumerAt[cons.name]; dup {
			return nil, fieldErr(fmt.Sprintf("consumers[%d].name", i), "%q is also consumers[%d]'s name: a consumer's name "+
				"is its identity for the responses it stores (two consumers of one name share them), not only its name "+
				"in logs; give each consumer its own name", cons.name, j)
		}
		consumerAt[cons.name] = i
		c.consumers = append(c.consumers, cons)
	}
	if err := c.setBindingKeys(raw.ResponseBindingKeyEnv, getenv, env); err != nil {
		return nil, err
	}
	if !isLowerName(c.routingHeader) {
		return nil, fieldErr("routing_header", "%q is not a lower-case header name ([a-z0-9-])", c.routingHeader)
	}
	if c.pathPrefix != "" && (!strings.HasPrefix(c.pathPrefix, "/") || strings.HasSuffix(c.pathPrefix, "/") || !isBasePath(c.pathPrefix)) {
		return nil, fieldErr("path_prefix", "%q must start with '/' and not end with one, e.g. \"/llm\"", c.pathPrefix)
	}
	if raw.MaxRequestBytes != nil {
		if *raw.MaxRequestBytes <= 0 || *raw.MaxRequestBytes > maxMaxRequestBytes {
			return nil, fieldErr("max_request_bytes", "must be between 1 and %d", maxMaxRequestBytes)
		}
		c.maxRequestBytes = *raw.MaxRequestBytes
	}
	if raw.BodyWaitSeconds != nil {
		if *raw.BodyWaitSeconds < 0 || *raw.BodyWaitSeconds > 3600 {
			return nil, fieldErr("body_wait_seconds", "must be between 0 (never) and 3600")
		}
		c.bodyWaitSeconds = *raw.BodyWaitSeconds
	}
	if raw.MaxEventBytes != nil {
		if *raw.MaxEventBytes < 1024 || *raw.MaxEventBytes > maxMaxRequestBytes {
			return nil, fieldErr("max_event_bytes", "must be between 1024 and %d", maxMaxRequestBytes)
		}
		c.maxEventBytes = *raw.MaxEventBytes
	}
	switch raw.UnknownPaths {
	case "", "passthrough":
	case "reject":
		c.rejectUnknown = true
	default:
		return nil, fieldErr("unknown_paths", "%q is not one of passthrough, reject", raw.UnknownPaths)
	}
	switch raw.Usage {
	case "":
		// Budgets need every answer's usage: without it a stream whose client did not ask for usage would be
		// charged its prompt's estimate only, however long its answer.
		c.forceUsage = c.budgets.on
	case "off":
	case "force":
		c.forceUsage = true
	default:
		return nil, fieldErr("usage", "%q is not one of off, force", raw.Usage)
	}
	keys := make([]string, 0, len(c.providers))
	for _, p := range c.providers {
		for _, k := range p.keys {
			keys = append(keys, k.value)
		}
	}
	c.secrets = redact.New(keys...)
	return c, nil
}

// minBindingKeyBytes is the shortest response_binding_key_env value taken: 32 random bytes' worth of hex.
const minBindingKeyBytes = 32

// setBindingKeys gives each provider the key its Responses ids are bound to consumers with: the operator's
// (response_binding_key_env), else the provider's own key, which every replica already has. Without
// consumers there is one tenant, and nothing is bound.
func (c *config) setBindingKeys(envName string, getenv func(string) string, env envSource) error {
	const field = "response_binding_key_env"
	if len(c.consumers) == 0 {
		if envName != "" {
			return fieldErr(field, "is set, but no consumers are configured: response ids are bound to consumers only; remove it, or add consumers")
		}
		return nil
	}
	var shared *translate.BindingKey
	if envName != "" {
		// The value is never echoed, as with api_key_env.
		if !isEnvName(envName) {
			return fieldErr(field, "must be an environment variable's name, not the key: put the key in the environment and name the variable here")
		}
		secret := getenv(envName)
		switch {
		case secret == "" && env == envFromShell:
			return fieldErr(field, "names a variable unset or empty in this shell: export it and run the check again (Envoy's VM gets it through vm_config.environment_variables)")
		case secret == "":
			return fieldErr(field, "names a variable that is unset or empty in the VM: add it to vm_config.environment_variables")
		case len(secret) < minBindingKeyBytes:
			return fieldErr(field, "names a variable whose value is shorter than %d bytes: use a random key, e.g. openssl rand -hex 32, the same on every replica", minBindingKeyBytes)
		}
		shared = translate.NewBindingKey(secret)
	}
	for _, p := range c.providers {
		p.bindingKey = shared
		if shared == nil {
			p.bindingKey = translate.NewBindingKey(p.key) // consumers exclude passthrough: every provider has a key
		}
	}
	return nil
}

// settingErr is a dialect setting's refusal as a configuration error at field (a path ending in '.', or ""
// at the top level).
func settingErr(field string, err *translate.SettingError) error {
	return fieldErr(field+err.Key, "%v", err.Err)
}

func parseProvider(field string, rp rawProvider, gateway translate.Settings, getenv func(string) string, env envSource) (*provider, error) {
	if !isLowerName(rp.Name) {
		return nil, fieldErr(field+".name", "%q must match [a-z0-9][a-z0-9-]* (it is also the routing header value Envoy routes match)", rp.Name)
	}
	field = fmt.Sprintf("%s (%s)", field, rp.Name)
	dialect, err := translate.ParseDialect(rp.Dialect)
	if err != nil {
		return nil, fieldErr(field+".dialect", "%v", err)
	}
	if !isHost(rp.Host) {
		return nil, fieldErr(field+".host", "%q is not a host name (give e.g. \"api.openai.com\", no scheme or path)", rp.Host)
	}
	p := &provider{name: rp.Name, dialect: dialect, host: rp.Host}
	if rp.BasePath != nil {
		if !isBasePath(*rp.BasePath) {
			return nil, fieldErr(field+".base_path", "%q must be empty or like \"/v1\" (no trailing '/', no query)", *rp.BasePath)
		}
		p.basePath = *rp.BasePath
	} else {
		p.basePath = translate.DefaultBasePathForHost(dialect, rp.Host)
	}

	credentials := 0
	for _, set := range []bool{rp.APIKey != "", rp.APIKeyEnv != "", rp.APIKeyEnvs != nil, rp.APIKeys != nil, rp.Auth == "passthrough"} {
		if set {
			credentials++
		}
	}
	if credentials != 1 {
		return nil, fieldErr(field, "needs exactly one of api_key_env (recommended), api_key_envs (several keys), api_key, api_keys, or \"auth\": \"passthrough\"")
	}
	settings := rp.Settings
	switch rp.Auth {
	case "", "passthrough":
		p.passthrough = rp.Auth == "passthrough"
	default: // another way to send the gateway's key, where the dialect has one ("bearer": an Entra token)
		settings = append(slices.Clip(settings), translate.Setting{Key: "auth", Value: rp.Auth})
	}
	p.key = rp.APIKey
	if rp.APIKeyEnv != "" {
		var err error
		if p.key, err = keyFromEnv(field+".api_key_env", rp.APIKeyEnv, getenv, env); err != nil {
			return nil, err
		}
	}
	if !translate.HeaderSafe(p.key) {
		return nil, fieldErr(field, "the API key contains control characters (it becomes a header value): check how it was pasted")
	}
	if p.key != "" {
		p.keys = []providerKey{{value: p.key}}
	}
	if rp.APIKeyEnvs != nil {
		if err := p.readKeys(field+".api_key_envs", rp.APIKeyEnvs, getenv, env); err != nil {
			return nil, err
		}
	}
	if rp.APIKeys != nil {
		if err := p.readKeys(field+".api_keys", rp.APIKeys, nil, env); err != nil {
			return nil, err
		}
	}
	p.cluster = orDefault(rp.Cluster, rp.Name)
	if strings.ContainsAny(p.cluster, "\r\n\x00") || len(p.cluster) > 256 {
		return nil, fieldErr(field+".cluster", "must be an Envoy cluster's name (at most 256 bytes, no line breaks)")
	}
	p.healthKey = healthKeyPrefix + p.name
	if len(p.keys) == 1 {
		// A single key's benches are the provider's: named by the key too, so that a fixed key (a new one in
		// the configuration) starts afresh instead of inheriting the old one's bench.
		p.healthKey += "/key-" + keyFingerprint(p.key)
	}

	if rp.APIVersion != "" {
		if err := translate.ValidateProviderAPIVersion(dialect, rp.APIVersion); err != nil {
			return nil, fieldErr(field+".api_version", "%v", err)
		}
		p.apiVersion = rp.APIVersion
	}
	var serr *translate.SettingError
	if p.settings, serr = gateway.With(dialect, translate.ProviderSetting, settings); serr != nil {
		if serr.Key == "auth" {
			return nil, fieldErr(field+".auth", "%v; or \"passthrough\", to forward each client's own key", serr.Err)
		}
		return nil, settingErr(field+".", serr)
	}
	if err := checkHostedTools(rp.HostedTools); err != nil {
		return nil, fieldErr(field+".hosted_tools", "%v", err)
	}
	p.hostedTools = rp.HostedTools
	if p.hostedTools != "" && p.dialect.Supports(translate.OpResponses) && !slices.ContainsFunc(rp.Models, func(m rawModel) bool { return m.ChatOnly }) {
		return nil, fieldErr(field+".hosted_tools", "%s", hostedToolsNotBridged)
	}
	if len(rp.Models) == 0 {
		return nil, fieldErr(field+".models", "is empty: list the models this provider serves (\"*\" for all)")
	}
	for i := range p.keys {
		k := &p.keys[i]
		k.authHeaders = translate.ProviderAuthHeaders(p.dialect, k.value, &p.settings)
		k.label = "#" + strconv.Itoa(i+1)
		if len(p.keys) > 1 {
			k.healthKey = p.healthKey + "/key-" + keyFingerprint(k.value)
		} else {
			k.healthKey = p.healthKey // one key: its bench is the provider's
		}
	}
	return p, nil
}

// keyFromEnv reads a key from the environment variable named at field (api_key_env, an api_key_envs item).
// The value is never echoed: an operator who pasted the key itself here would find it in Envoy's log; nor is
// the name of an unset variable, which might be a key that happens to look like one.
func keyFromEnv(field, name string, getenv func(string) string, env envSource) (string, error) {
	if !isEnvName(name) {
		return "", fieldErr(field, "must be an environment variable's name, not the key: put the key in the environment and name the variable here")
	}
	key := getenv(name)
	switch {
	case key == "" && env == envFromShell:
		return "", fieldErr(field, "names a variable unset or empty in this shell: export it and run the check again (Envoy's VM gets it through vm_config.environment_variables)")
	case key == "":
		return "", fieldErr(field, "names a variable that is unset or empty in the VM: add it to vm_config.environment_variables")
	}
	return key, nil
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func parseModel(field string, rm rawModel, p *provider) (modelRoute, error) {
	pattern, err := compileGlob(rm.Name)
	if err != nil {
		return modelRoute{}, fieldErr(field+".name", "%v", err)
	}
	route := modelRoute{provider: p, pattern: pattern, label: metricLabel(rm.Name), model: rm.Model,
		chatOnly: rm.ChatOnly, head: &translate.HeadCache{}, weight: 1}
	if rm.Priority != nil {
		if *rm.Priority < 0 || *rm.Priority > 1000 {
			return route, fieldErr(field+".priority", "must be between 0 (tried first, the default) and 1000")
		}
		route.priority = *rm.Priority
	}
	if rm.Weight != nil {
		if *rm.Weight < 1 || *rm.Weight > 1000 {
			return route, fieldErr(field+".weight", "must be between 1 (the default) and 1000: the share of requests among the providers of one priority")
		}
		route.weight = *rm.Weight
	}
	if rm.ContextWindow != nil {
		if *rm.ContextWindow < 1 || *rm.ContextWindow > maxContextWindow {
			return route, fieldErr(field+".context_window", "must be between 1 and %d tokens: the model's context window, so that a request too long for another provider's model is tried on this one", maxContextWindow)
		}
		route.contextWindow = *rm.ContextWindow
	}
	if strings.ContainsAny(rm.Model, "\r\n\x00") {
		return route, fieldErr(field+".model", "contains a line break or NUL")
	}
	if err := checkHostedTools(rm.HostedTools); err != nil {
		return route, fieldErr(field+".hosted_tools", "%v", err)
	}
	if rm.HostedTools != "" && !rm.ChatOnly && p.dialect.Supports(translate.OpResponses) {
		return route, fieldErr(field+".hosted_tools", "%s", hostedToolsNotBridged)
	}
	route.dropHostedTools = orDefault(rm.HostedTools, p.hostedTools) == hostedToolsDrop
	var serr *translate.SettingError
	if route.settings, serr = p.settings.With(p.dialect, translate.ModelSetting, rm.Settings); serr != nil {
		return route, settingErr(field+".", serr)
	}
	return route, nil
}

// The values of hosted_tools: what a Responses request bridged to chat completions does with the tools that
// run on the Responses API's servers (web_search, file_search, ...), which a chat provider cannot run.
const (
	hostedToolsRefuse = "refuse" // 400 naming the tool (the default)
	hostedToolsDrop   = "drop"   // left out, named in x-aidialect-dropped-params
)

// hostedToolsNotBridged says why hosted_tools is refused where no Responses request is bridged: the key would
// be silently ignored there.
const hostedToolsNotBridged = "applies to Responses requests bridged to chat completions (azure-ai and eternalai " +
	"providers, and models marked chat_only), and this provider's Responses API runs hosted tools itself: remove " +
	"it, or mark the models chat_only"

func checkHostedTools(v string) error {
	switch v {
	case "", hostedToolsRefuse, hostedToolsDrop:
		return nil
	}
	return fmt.Errorf("is %q: use %q (the default: a request with a hosted tool gets 400) or %q (the tool is left out)",
		v, hostedToolsRefuse, hostedToolsDrop)
}

func parseConsumer(field string, rc rawConsumer) (consumer, error) {
	c := consumer{name: rc.Name}
	const identity = "a consumer's name is its identity for the responses it stores, and appears in logs"
	switch {
	case rc.Name == "":
		return c, fieldErr(field+".name", "is empty: name the consumer (%s)", identity)
	case strings.ContainsRune(rc.Name, utf8.RuneError):
		// A lone surrogate escape decodes to U+FFFD: names that differ in the file could be one name.
		return c, fieldErr(field+".name", "%q has U+FFFD (an invalid character or a lone surrogate escape, which "+
			"different escapes decode to alike): %s, so write it in plain characters", rc.Name, identity)
	}
	sum, err := hex.DecodeString(rc.KeySHA256)
	if err != nil || len(sum) != 32 {
		return c, fieldErr(field+".key_sha256", "must be 64 hex digits: the SHA-256 of the consumer's key (printf %%s \"$KEY\" | sha256sum)")
	}
	copy(c.keySum[:], sum)
	for j, m := range rc.Models {
		g, err := compileGlob(m)
		if err != nil {
			return c, fieldErr(fmt.Sprintf("%s.models[%d]", field, j), "%v", err)
		}
		c.models = append(c.models, g)
	}
	return c, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// glob is a compiled model-name pattern: literal text with '*' matching any run of characters.
type glob struct {
	parts []string // the text between '*'s; one part means no '*'
}

var errEmptyGlob = errors.New("is empty: give a model name, or a pattern with '*'")

func compileGlob(pattern string) (glob, error) {
	if pattern == "" {
		return glob{}, errEmptyGlob
	}
	if len(pattern) > 256 || strings.ContainsAny(pattern, "\r\n\x00?[]") {
		return glob{}, fmt.Errorf("%q: only '*' is a wildcard; '?', '[' and ']' are not supported, and names are at most 256 bytes", pattern)
	}
	return glob{parts: strings.Split(pattern, "*")}, nil
}

func (g glob) literal() bool { return len(g.parts) == 1 }

func (g glob) match(s string) bool {
	if g.literal() {
		return s == g.parts[0]
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, mid := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}

// getenv is os.Getenv, a variable so tests can supply an environment (proxytest's wasm mode sets none).
var getenv = os.Getenv

// warnAPIVersions reports each operation a provider's dialect has but its pinned api_version lacks (Azure AI
// completions outside 2024-04-01-preview, Azure OpenAI completions on v1): the filter refuses those requests
// locally, which is right, but an operator should hear of it before a client does. check-config prints the
// warnings; the plugin logs them when it starts.
func warnAPIVersions(c *config, warn func(format string, args ...any)) {
	for _, p := range c.providers {
		for _, op := range []translate.Operation{translate.OpChatCompletions, translate.OpCompletions, translate.OpEmbeddings, translate.OpResponses} {
			if op == translate.OpResponses && c.allChatOnly(p) {
				continue // its models bridge Responses requests to chat completions
			}
			if p.apiVersion != "" && p.dialect.Supports(op) && !translate.ProviderHasOperation(p.dialect, op, p.apiVersion) {
				also := ""
				if op == translate.OpResponses {
					also = "; or mark its models chat_only, to bridge Responses requests to their chat completions"
				}
				warn("provider %q: api_version %q has no %s operation, so %s requests for its models are refused (404 unsupported_operation): %s%s",
					p.name, p.apiVersion, op, op, translate.OperationVersionHint(p.dialect, op), also)
			}
		}
	}
}

// serves reports whether a models entry can serve an operation: its dialect has it (a Responses request is
// bridged to chat completions where the dialect lacks the Responses API, or the model is chat_only) and its
// pinned api_version does too.
func (r *modelRoute) serves(op translate.Operation) bool {
	p := r.provider
	if op == translate.OpResponses && (r.chatOnly || !p.dialect.Supports(op)) {
		op = translate.OpChatCompletions
	}
	return p.dialect.Supports(op) && (p.apiVersion == "" || translate.ProviderHasOperation(p.dialect, op, p.apiVersion))
}

// warnCandidates reports, for a model name several providers serve, each operation one candidate serves and
// another cannot: such requests never go to that candidate (a failover skips it), which an operator who
// listed it as a fallback should know.
func warnCandidates(c *config, warn func(format string, args ...any)) {
	names := make([]string, 0, len(c.exact))
	for name, candidates := range c.exact {
		if len(candidates) > 1 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		candidates := c.exact[name]
		for _, op := range []translate.Operation{translate.OpChatCompletions, translate.OpCompletions, translate.OpEmbeddings, translate.OpResponses} {
			if !slices.ContainsFunc(candidates, func(r modelRoute) bool { return r.serves(op) }) {
				continue
			}
			for _, r := range candidates {
				if !r.serves(op) {
					warn("model %q: provider %q (%s) cannot serve %s requests, which another of its providers serves: those requests never fail over to it",
						name, r.provider.name, r.provider.dialect, op)
				}
			}
		}
	}
}

// allChatOnly reports whether every model entry of the provider is marked chat_only.
func (c *config) allChatOnly(p *provider) bool {
	found := false
	for _, candidates := range c.exact {
		for _, r := range candidates {
			if r.provider == p {
				found = true
				if !r.chatOnly {
					return false
				}
			}
		}
	}
	for _, r := range c.globs {
		if r.provider == p {
			found = true
			if !r.chatOnly {
				return false
			}
		}
	}
	return found
}
