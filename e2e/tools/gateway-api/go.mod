// Wrapper module that builds the Gateway API conformance echo server (echo-basic) for the e2e
// node's images. The conformance module replaces sigs.k8s.io/gateway-api with its parent
// directory, so `go install ...@version` refuses it; here it is required at the same version.
// The version is kept in sync with e2e/tools.json (gatewayApi) by scripts/install-test-tools.sh.
module tollgate.dev/e2e/tools/gateway-api

go 1.26.0

tool sigs.k8s.io/gateway-api/conformance/echo-basic

require (
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260427160629-7cedc36a6bc4 // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	sigs.k8s.io/gateway-api/conformance v1.6.1 // indirect
)
