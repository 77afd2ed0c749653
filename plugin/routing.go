package main

import (
	"crypto/subtle"
	"strings"

	"github.com/aidialect/aidialect/internal/sha256"
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
		ChatOnly:        r.chatOnly,
		DropHostedTools: r.dropHostedTools,
	}
}

// headCache is a models entry's last rendered request line. translate.RenderHead reads nothing but the client
// request and the target, so for inputs equal to the last ones (every field compared) its result is the same;
// rendered anew it costs a dozen microseconds and several allocations per request. The inputs that come from
// the request are copied: a host may hand the guest strings in memory it later reuses.
type headCache struct {
	req    requestKey
	target targetKey
	head   translate.UpstreamHead
	valid  bool
}

// requestKey and targetKey are translate.ClientRequest and translate.Target field for field: the conversions
// to them stop compiling when either type gains a field, which renderHead would then have to compare.
type requestKey struct {
	Dialect                                                           translate.Dialect
	Op                                                                translate.Operation
	Deployment, APIVersion, SurfaceVersion, ModelHeader, PolicyHeader string
}

type targetKey struct {
	Dialect                                                          translate.Dialect
	BasePath, APIVersion, Deployment, Model, ChainID, DefaultChainID string
	ExtraParameters                                                  translate.ExtraParameters
	ChatOnly, DropHostedTools, ForceStreamUsage                      bool
	// DropHostedTools and Binding are not compared: RenderHead reads neither (they edit the body, Binding
	// binds the body's and the answer's ids).
	Binding translate.ResponseBinding
}

// sameString is ==, without a call for the empty strings most of the cache's inputs are.
func sameString(a, b string) bool { return len(a) == len(b) && (len(a) == 0 || a == b) }

// renderHead is translate.RenderHead, remembered per models entry. The result's slices are shared: callers
// read them only.
func (r *modelRoute) renderHead(req *translate.ClientRequest, t *translate.Target) (translate.UpstreamHead, *translate.Error) {
	c := r.head
	if c == nil {
		return translate.RenderHead(req, t)
	}
	key, target := requestKey(*req), targetKey(*t)
	// == on both, written out: the generated comparison calls a function per string (costly in the module).
	a, b := &c.req, &c.target
	if c.valid && a.Dialect == key.Dialect && a.Op == key.Op && sameString(a.Deployment, key.Deployment) &&
		sameString(a.APIVersion, key.APIVersion) && sameString(a.SurfaceVersion, key.SurfaceVersion) &&
		sameString(a.ModelHeader, key.ModelHeader) && sameString(a.PolicyHeader, key.PolicyHeader) &&
		b.Dialect == target.Dialect && b.ExtraParameters == target.ExtraParameters &&
		b.ForceStreamUsage == target.ForceStreamUsage && b.ChatOnly == target.ChatOnly && sameString(b.BasePath, target.BasePath) &&
		sameString(b.APIVersion, target.APIVersion) && sameString(b.Deployment, target.Deployment) &&
		sameString(b.Model, target.Model) && sameString(b.ChainID, target.ChainID) &&
		sameString(b.DefaultChainID, target.DefaultChainID) {
		return c.head, nil
	}
	for _, s := range [...]*string{&key.Deployment, &key.APIVersion, &key.SurfaceVersion, &key.ModelHeader, &key.PolicyHeader} {
		*s = strings.Clone(*s)
	}
	if target.Model == r.model {
		target.Model = r.model // the configuration's memory: a later comparison finds it at once
	} else {
		target.Model = strings.Clone(target.Model)
	}
	req2, t2 := translate.ClientRequest(key), translate.Target(target)
	head, err := translate.RenderHead(&req2, &t2)
	if err != nil {
		return head, err
	}
	*c = headCache{req: key, target: target, head: head, valid: true}
	return head, nil
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
