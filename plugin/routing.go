package main

import (
	"crypto/subtle"

	"github.com/aidialect/aidialect/internal/sha256"
	"github.com/aidialect/aidialect/translate"
)

// defaultLabel is the metric label of requests routed by default_provider rather than a models entry.
const defaultLabel = "default"

// resolve finds the candidates that may serve a model, in order: an exact name on any provider, then globs in
// configuration order, then default_provider; none when nothing serves it. Each models entry has one
// candidate today; the list is the configuration's own (a failover list adds to it).
func (c *config) resolve(model string) []modelRoute {
	if r, ok := c.exact[model]; ok {
		return r
	}
	for i := range c.globs {
		if c.globs[i].pattern.match(model) {
			return c.globs[i : i+1]
		}
	}
	return c.defaultRoute
}

// target is what translate needs to render a request for this route.
func (c *config) target(r *modelRoute, clientModel string) translate.Target {
	p := r.provider
	return translate.Target{
		Dialect:          p.dialect,
		BasePath:         p.basePath,
		APIVersion:       p.apiVersion,
		Model:            orDefault(r.model, clientModel),
		Settings:         r.settings,
		ChatOnly:         r.chatOnly,
		DropHostedTools:  r.dropHostedTools,
		ForceStreamUsage: c.forceUsage,
	}
}

// authenticate finds the consumer whose key hashes to the client's. Every consumer is compared, in
// constant time, so the answer's timing says nothing about which digest came close.
func (c *config) authenticate(key string) *consumer {
	if key == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(key))
	var found *consumer
	for i := range c.consumers {
		if subtle.ConstantTimeCompare(sum[:], c.consumers[i].keySum[:]) == 1 {
			found = &c.consumers[i]
		}
	}
	return found
}

// allows reports whether the consumer may use the model; a consumer without models may use every model.
func (c *consumer) allows(model string) bool {
	if len(c.models) == 0 {
		return true
	}
	for _, g := range c.models {
		if g.match(model) {
			return true
		}
	}
	return false
}
