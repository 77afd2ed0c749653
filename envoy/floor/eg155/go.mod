module github.com/aidialect/aidialect/envoy/floor/eg155

// The Envoy Gateway files of ../../gateway checked with the field set of the minimum supported Envoy
// Gateway, v1.5.5 (https://github.com/envoyproxy/gateway/blob/v1.5.5/go.mod), which pins
// github.com/envoyproxy/go-control-plane/envoy v1.35.1-0.20250724095927-7a953c2d3b3e. The Go module proxy
// does not serve that pseudo-version (nor github.com/envoyproxy/gateway v1.5.5), so this module pins the
// nearest served versions with the same field set:
//   - go-control-plane envoy v1.35.0 (commit 5321204dac14, two days older): `git diff --stat envoy/v1.35.0
//     7a953c2d3b3e -- envoy/` in github.com/envoyproxy/go-control-plane changes only a comment in
//     health_check.pb.go and adds `rate_limits` to the HTTP rate-limit filter, which these files do not use;
//   - Envoy Gateway v1.5.0: `git diff v1.5.0 v1.5.5 -- api/` in github.com/envoyproxy/gateway changes
//     kubebuilder markers, struct tags and default image names, no field.
// A module of its own so that ../../go.mod can move to a newer Envoy API without moving this floor;
// while both pin the same versions they share compiled packages in the Go build cache.
go 1.24.6

require (
	github.com/envoyproxy/gateway v1.5.0
	github.com/envoyproxy/go-control-plane/envoy v1.35.0
	github.com/ohler55/ojg v1.26.8
	google.golang.org/protobuf v1.36.11
	sigs.k8s.io/gateway-api v1.3.1-0.20250527223622-54df0a899c1c
	sigs.k8s.io/json v0.0.0-20241014173422-cfa47c3a1cc8
	sigs.k8s.io/yaml v1.6.0
)

require (
	cel.dev/expr v0.24.0 // indirect
	github.com/cncf/xds/go v0.0.0-20250501225837-2ac532fd4443 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/envoyproxy/protoc-gen-validate v1.2.1 // indirect
	github.com/evanphx/json-patch v5.9.11+incompatible // indirect
	github.com/fxamacker/cbor/v2 v2.8.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v0.21.1 // indirect
	github.com/go-openapi/jsonreference v0.21.0 // indirect
	github.com/go-openapi/swag v0.23.1 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/gnostic-models v0.6.9 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.9.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.48.0 // indirect
	golang.org/x/text v0.32.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20251213004720-97cd9d5aeac2 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251213004720-97cd9d5aeac2 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/api v0.33.3 // indirect
	k8s.io/apiextensions-apiserver v0.33.3 // indirect
	k8s.io/apimachinery v0.33.3 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250318190949-c8a335a9a2ff // indirect
	k8s.io/utils v0.0.0-20250604170112-4c0f3b243397 // indirect
	sigs.k8s.io/controller-runtime v0.21.0 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.7.0 // indirect
)
