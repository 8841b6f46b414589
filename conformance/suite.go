//go:build tools

// Keeps the conformance suite in this module's requirements (`go mod tidy` drops a
// requirement no file imports); the suite itself is built with `go test -c`.
package conformance

import _ "sigs.k8s.io/gateway-api/conformance"
