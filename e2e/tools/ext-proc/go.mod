// ext-proc: an Envoy external processor (envoy.service.ext_proc.v3.ExternalProcessor) on the
// official Go types, for the extProc tests (packages/proxy/test/ext-proc.test.ts). Built by
// scripts/install-test-tools.sh; the go-control-plane version is e2e/tools.json's goControlPlane.
module tollgate.dev/e2e/tools/ext-proc

go 1.26.0

require (
	github.com/envoyproxy/go-control-plane/envoy v1.40.0
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cncf/xds/go v0.0.0-20260202195803-dba9d589def2 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.3.3 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260720211330-0afa2a65878a // indirect
)
