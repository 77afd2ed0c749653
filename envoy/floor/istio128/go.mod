module github.com/aidialect/aidialect/envoy/floor/istio128

// The Istio files of ../../istio checked with the protos of the minimum supported Istio, 1.28: istio.io/api
// and go-control-plane exactly as Istio 1.28.0's go.mod pins them
// (https://github.com/istio/istio/blob/1.28.0/go.mod). A module of its own because one module can hold
// only one version of go-control-plane, and ../../go.mod pins the Envoy 1.35 API. When the supported
// Istio floor moves, move these two pins to what the new floor's go.mod says. The other modules
// (protobuf runtime, genproto, ...) define no Envoy or Istio fields; they are kept at ../../go.mod's
// versions so both modules share compiled packages in the Go build cache.
go 1.24.6

require (
	github.com/envoyproxy/go-control-plane/envoy v1.35.1-0.20251009075907-cccc37f025be
	google.golang.org/protobuf v1.36.11
	istio.io/api v1.28.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	cel.dev/expr v0.24.0 // indirect
	github.com/cncf/xds/go v0.0.0-20250501225837-2ac532fd4443 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.2.1 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20251213004720-97cd9d5aeac2 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251213004720-97cd9d5aeac2 // indirect
)
