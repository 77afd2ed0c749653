//go:build !wasip1

package main

import (
	"slices"
	"strconv"
	"strings"
)

// rateLimitConfig is a starting configuration for Envoy's rate-limit service from the filter's: the domain
// and a descriptor per consumer (and per consumer and model, when budgets.per has consumer_model; without
// consumers, the one every request shares), each with a placeholder limit for the operator to set. The service counts tokens as
// its "requests": requests_per_unit is tokens per unit.
func rateLimitConfig(c *config) string {
	var b strings.Builder
	b.WriteString("# Starting configuration for Envoy's rate-limit service (github.com/envoyproxy/ratelimit), from the\n" +
		"# aidialect configuration (go run ./plugin ratelimit-config). requests_per_unit counts TOKENS per unit\n" +
		"# (second, minute, hour, day, week, month or year): set each budget; a descriptor without rate_limit\n" +
		"# counts nothing. Windows are fixed (they reset at the unit's boundary) and the counters live in Redis,\n" +
		"# shared by every gateway replica using this service.\n")
	b.WriteString("domain: " + yamlString(c.budgets.domain) + "\n")
	b.WriteString("descriptors:\n")
	consumers := make([]string, 0, len(c.consumers))
	for _, cons := range c.consumers {
		consumers = append(consumers, cons.name)
	}
	if len(consumers) == 0 {
		consumers = append(consumers, anonymousConsumer)
	}
	models := c.budgetModelLabels()
	for _, name := range consumers {
		writeConsumerBudget(&b, c, yamlString(name), models)
	}
	return b.String()
}

func writeConsumerBudget(b *strings.Builder, c *config, value string, models []string) {
	b.WriteString("  - key: " + descriptorConsumer + "\n    value: " + value + "\n")
	if c.budgets.perConsumer {
		b.WriteString("    rate_limit: {unit: day, requests_per_unit: 1000000}\n")
	}
	if c.budgets.perModel {
		b.WriteString("    descriptors:\n")
		for _, m := range models {
			b.WriteString("      - key: " + descriptorModel + "\n        value: " + yamlString(m) +
				"\n        rate_limit: {unit: day, requests_per_unit: 1000000}\n")
		}
	}
}

// budgetModelLabels are the model descriptor's values: the configured entries' names as the filter sends
// them (modelRoute.label), each once, in order.
func (c *config) budgetModelLabels() []string {
	var labels []string
	for _, t := range c.metricTargets {
		if !slices.Contains(labels, t.label) {
			labels = append(labels, t.label)
		}
	}
	return labels
}

// yamlString quotes a value for YAML when it could be read as something else. A quoted value is a YAML
// double-quoted scalar with every character outside printable ASCII escaped (\n, \t, \uXXXX: escapes Go's
// strconv.QuoteToASCII writes and YAML reads alike), so a name with a control character keeps it.
func yamlString(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return strconv.QuoteToASCII(s)
		}
	}
	if s == "" || s == "true" || s == "false" || s == "null" || s == "yes" || s == "no" || s[0] >= '0' && s[0] <= '9' {
		return `"` + s + `"`
	}
	return s
}
