#!/usr/bin/env bash
# Builds the Gateway API conformance suite (a Go test binary) from the module proxy into the
# tool cache, keyed by version: ${TOLLGATE_CACHE:-~/.cache/tollgate}/gateway-api-conformance-<v>/.
# Idempotent: a cached binary is kept. Prints the binary's path on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HERE}/.." && pwd)"
CACHE="${TOLLGATE_CACHE:-${HOME}/.cache/tollgate}"
log() { printf '[conformance %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

ver="$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).gatewayApi' "${REPO_ROOT}/e2e/tools.json")"
dest="${CACHE}/gateway-api-conformance-${ver}"
bin="${dest}/conformance.test"
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi
grep -qE "^require sigs\.k8s\.io/gateway-api/conformance ${ver//./\\.}$" "${HERE}/go.mod" \
  || { log "error: conformance/go.mod does not require sigs.k8s.io/gateway-api/conformance ${ver} (e2e/tools.json gatewayApi); update both together"; exit 1; }
command -v go >/dev/null 2>&1 || export PATH="${PATH}:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || { log "error: go is required (install Go 1.26)"; exit 1; }
log "building the Gateway API conformance suite ${ver} (go test -c; about 1.5 min, 4 min on a loaded machine)"
start=$SECONDS
rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
env -C "${HERE}" CGO_ENABLED=0 go test -c -trimpath -ldflags "-s -w" -o "${dest}.tmp/conformance.test" sigs.k8s.io/gateway-api/conformance
rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
log "built in $((SECONDS - start))s: ${bin}"
echo "${bin}"
