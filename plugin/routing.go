package main

import (
	"crypto/subtle"

	"github.com/aidialect/aidialect/translate"
)

// defaultLabel is the metric label of requests routed by default_provider rather than a models entry.
const defaultLabel = "default"

// resolve finds the provider for a model: an exact name on any provider, then globs in configuration order,
// then default_provider.
func (c *config) resolve(model string) (modelRoute, bool) {
	if r, ok := c.exact[model]; ok {
		return r, true
	}
	for _, r := range c.globs {
		if r.pattern.match(model) {
			return r, true
		}
	}
	if c.defaultRoute != nil {
		return *c.defaultRoute, true
	}
	return modelRoute{}, false
}

// target is what translate needs to render a request for this route.
func (r *modelRoute) target(clientModel string) translate.Target {
	p := r.provider
	return translate.Target{
		Dialect:         p.dialect,
		BasePath:        p.basePath,
		APIVersion:      p.apiVersion,
		Deployment:      r.deployment,
		Model:           orDefault(r.model, clientModel),
		ChainID:         r.chainID,
		DefaultChainID:  p.chainID,
		ExtraParameters: p.extraParameters,
	}
}

// authenticate finds the consumer whose key hashes to the client's. Every consumer is compared, in
// constant time, so the answer's timing says nothing about which digest came close.
func (c *config) authenticate(key string) *consumer {
	if key == "" {
		return nil
	}
	sum := sum256([]byte(key))
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
