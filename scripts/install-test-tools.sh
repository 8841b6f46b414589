#!/usr/bin/env bash
# Installs the tools the Tollgate test suites need. Idempotent: a tool already
# in the cache is not rebuilt. Run as root on a fresh Debian machine (CI) or as
# a developer (apt packages are then skipped unless you are root or have sudo).
#
# Built binaries are cached outside the repo, keyed by version:
#   ${TOLLGATE_CACHE:-~/.cache/tollgate}/<tool>-<version>/<binary>
# Versions live in e2e/tools.json; e2e/lib/tools.ts reads the same file.
#
# Later tools are added as one more install_* function called from main.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_JSON="${REPO_ROOT}/e2e/tools.json"
CACHE="${TOLLGATE_CACHE:-${HOME}/.cache/tollgate}"
APT_UPDATED=0

log() { printf '[install-test-tools %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# version NAME -> the value of NAME in e2e/tools.json
version() {
  node -e 'const v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]];
    if (typeof v !== "string") { console.error("no version for " + process.argv[2]); process.exit(1); }
    process.stdout.write(v);' "${TOOLS_JSON}" "$1"
}

need_cmd() { command -v "$1" >/dev/null 2>&1 || die "$1 is required ($2)"; }

# cached <what> <binary>: true, and says so, when an earlier run left the binary in the cache.
cached() {
  [[ -x "$2" ]] || return 1
  log "$1: cached in $(dirname "$2")"
}

# go_build <what> <dest> <command...>: runs a Go build that writes into <dest>.tmp, then (by
# finish_build) the directory takes its place in one step, so an interrupted build is never
# taken for a cached one.
go_build() {
  local what="$1" dest="$2"; shift 2
  need_cmd go "install Go 1.26"
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  with_progress "${what}" "$@"
}
finish_build() { rm -rf "$1" && mv "$1.tmp" "$1"; }

# Runs a long command, printing a progress line every 30s so a cold build is visibly alive.
with_progress() {
  local what="$1"; shift
  local start=$SECONDS next=$((SECONDS + 30))
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if (( SECONDS >= next )) && kill -0 "$pid" 2>/dev/null; then
      log "${what}: still working ($((SECONDS - start))s)"
      next=$((next + 30))
    fi
  done
  wait "$pid" || die "${what} failed"
  log "${what}: done in $((SECONDS - start))s"
}

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  (( ${#missing[@]} )) || return 0
  local sudo=""
  if (( EUID != 0 )); then
    command -v sudo >/dev/null 2>&1 || { log "skipping apt packages ${missing[*]} (not root, no sudo)"; return 0; }
    sudo="sudo"
  fi
  if (( ! APT_UPDATED )); then
    log "apt-get update"
    $sudo apt-get update -qq
    APT_UPDATED=1
  fi
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Checks that a wrapper Go module requires the version e2e/tools.json names.
check_module_version() {
  local dir="$1" module="$2" want="$3"
  grep -qE "^[[:space:]]*(require[[:space:]]+)?${module//./\\.} ${want//./\\.}([[:space:]]|$)" "${dir}/go.mod" \
    || die "${dir}/go.mod does not require ${module} ${want} (e2e/tools.json); update both together"
}

install_apt_packages() {
  # One apt-get run for everything below: each run reads the package lists again.
  # openssl: the e2e harness makes the cluster's CA and client certificates.
  # tmux: the gwctl terminal UI test drives the UI in a real pseudo-terminal.
  local pkgs=(ca-certificates openssl tmux)
  # The e2e node: containerd (with runc and the CNI plugins), iptables and nftables for
  # kube-proxy, conntrack and socat for port-forward; podman (with mmdebstrap for the local
  # base image) builds and runs the project's images; gcc builds the pause program.
  pkgs+=(containerd runc containernetworking-plugins iptables nftables conntrack socat podman mmdebstrap gcc libc6-dev)
  # redis-server: the store behind envoyproxy/ratelimit in the global rate limit tests
  # (packages/proxy/test/support/rls.ts starts one on a free loopback port). The Debian
  # package may start a system-wide redis on :6379; the tests start their own.
  command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
  # python3 with venv: the official Python openai client runs from a venv in the cache.
  command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || pkgs+=(python3-venv)
  apt_install "${pkgs[@]}"
}

# The version variables Kubernetes' release build sets, so that clients (kubectl version,
# discovery, the node's status) see a real version.
kube_ldflags() {
  local ver="$1" major minor pkg build_date ldflags="-s -w"
  major="${ver#v}"; major="${major%%.*}"
  minor="${ver#v*.}"; minor="${minor%%.*}"
  build_date="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${ver} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done
  printf '%s' "${ldflags}"
}

# All six Kubernetes binaries (kube-apiserver, kubectl and the node's kubelet, kube-proxy,
# kube-controller-manager, kube-scheduler) from the wrapper module, in one `go build`: the
# packages they share compile once and the six links run beside the remaining compiles.
# Cached in two directories, kubernetes-<v>/ (what the API-server-only suites need) and
# kubernetes-node-<v>/.
install_kube() {
  local ver staging dest node_dest dir work
  ver="$(version kubernetes)"
  staging="$(version kubernetesStaging)"
  dest="${CACHE}/kubernetes-${ver}"
  node_dest="${CACHE}/kubernetes-node-${ver}"
  dir="${REPO_ROOT}/e2e/tools/kube"
  if [[ -x "${dest}/kube-apiserver" && -x "${dest}/kubectl" && -x "${node_dest}/kubelet" && -x "${node_dest}/kube-proxy" \
        && -x "${node_dest}/kube-controller-manager" && -x "${node_dest}/kube-scheduler" ]]; then
    log "Kubernetes ${ver} (kube-apiserver, kubectl, kubelet, kube-proxy, kube-controller-manager, kube-scheduler): cached in ${dest} and ${node_dest}"
    return 0
  fi
  check_module_version "${dir}" k8s.io/kubernetes "${ver}"
  grep -q "k8s.io/apiserver => k8s.io/apiserver ${staging}" "${dir}/go.mod" \
    || die "${dir}/go.mod does not replace the staging modules with ${staging}"
  need_cmd go "install Go 1.26"
  log "building kube-apiserver, kubectl, kubelet, kube-proxy, kube-controller-manager and kube-scheduler ${ver} from the Go module proxy (one go build)"
  work="${CACHE}/kubernetes-build-${ver}.tmp"
  rm -rf "${work}" && mkdir -p "${work}"
  with_progress "go build Kubernetes ${ver} (6 binaries)" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "$(kube_ldflags "${ver}")" -o "${work}/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
  rm -rf "${dest}.tmp" "${node_dest}.tmp" && mkdir -p "${dest}.tmp" "${node_dest}.tmp"
  mv "${work}/kube-apiserver" "${work}/kubectl" "${dest}.tmp/"
  mv "${work}/kubelet" "${work}/kube-proxy" "${work}/kube-controller-manager" "${work}/kube-scheduler" "${node_dest}.tmp/"
  rm -rf "${work}" "${dest}" "${node_dest}" && mv "${dest}.tmp" "${dest}" && mv "${node_dest}.tmp" "${node_dest}"
  "${dest}/kube-apiserver" --version >&2
}

# Images the e2e node needs and no registry can supply here: the pod sandbox (pause), cluster
# DNS (CoreDNS) and the Gateway API conformance echo server. Each is one static binary in an
# otherwise empty image, built with podman and saved as an OCI archive that the node harness
# imports into containerd. Tagged with the names the upstream manifests use, so manifests
# that name them with imagePullPolicy IfNotPresent run unchanged.
install_node_images() {
  local coredns gwapi pause_ver pause_src key dest work
  coredns="$(version coredns)"
  gwapi="$(version gatewayApi)"
  pause_ver="$(version pause)"
  pause_src="${REPO_ROOT}/e2e/tools/pause/pause.c"
  # The key covers the sources built here, so a changed pause program or CoreDNS plugin list
  # rebuilds the images.
  key="$(cat "${pause_src}" "${REPO_ROOT}/e2e/tools/coredns/main.go" "${REPO_ROOT}/e2e/tools/coredns/go.mod" | sha256sum | cut -c1-12)"
  dest="${CACHE}/node-images-pause${pause_ver}-${key}-coredns${coredns}-echo${gwapi}"
  if [[ -f "${dest}/pause.oci.tar" && -f "${dest}/coredns.oci.tar" && -f "${dest}/echo-basic.oci.tar" ]]; then
    log "node images (pause ${pause_ver}, CoreDNS ${coredns}, echo-basic ${gwapi}): cached in ${dest}"
    return 0
  fi
  need_cmd go "install Go 1.26"
  need_cmd podman "apt-get install podman"
  need_cmd gcc "apt-get install gcc libc6-dev"
  # shellcheck source=../images/podman-env.sh
  source "${REPO_ROOT}/images/podman-env.sh"
  work="$(mktemp -d)"
  trap 'rm -rf "${work:-}"; trap - RETURN' RETURN
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp" "${work}/pause" "${work}/coredns" "${work}/echo-basic"

  gcc -static -Os -Wall -Wextra -Werror -o "${work}/pause/pause" "${pause_src}"
  strip "${work}/pause/pause"
  # CoreDNS with the plugins the node and the conformance manifests use (e2e/tools/coredns):
  # the upstream binary's cloud DNS providers would triple the build time.
  check_module_version "${REPO_ROOT}/e2e/tools/coredns" github.com/coredns/coredns "${coredns}"
  log "building CoreDNS ${coredns} (e2e/tools/coredns)"
  with_progress "go build CoreDNS ${coredns}" \
    env -C "${REPO_ROOT}/e2e/tools/coredns" CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "${work}/coredns/coredns" .
  check_module_version "${REPO_ROOT}/e2e/tools/gateway-api" sigs.k8s.io/gateway-api/conformance "${gwapi}"
  log "building echo-basic ${gwapi} (e2e/tools/gateway-api)"
  with_progress "go build echo-basic ${gwapi}" \
    env -C "${REPO_ROOT}/e2e/tools/gateway-api" CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
      -o "${work}/echo-basic/echo-basic" sigs.k8s.io/gateway-api/conformance/echo-basic

  node_image "${work}/pause" pause "tollgate.local/pause:${pause_ver}" "${dest}.tmp/pause.oci.tar" '"/pause"' 65535
  node_image "${work}/coredns" coredns "registry.k8s.io/coredns/coredns:${coredns}" "${dest}.tmp/coredns.oci.tar" '"/coredns"' 0
  # The conformance suite's manifests name several echo-basic tags; one image serves them all
  # (the harness tags it with each name in containerd).
  node_image "${work}/echo-basic" echo-basic "registry.k8s.io/gateway-api/echo-basic:${gwapi}" "${dest}.tmp/echo-basic.oci.tar" '"/echo-basic"' 65532
  rm -rf "${work}" "${dest}" && mv "${dest}.tmp" "${dest}"
  log "node images: $(du -sh "${dest}" | cut -f1) in ${dest}"
}

# node_image DIR BINARY NAME ARCHIVE ENTRYPOINT UID: an image of DIR/BINARY alone, saved as an
# OCI archive.
node_image() {
  local dir="$1" bin="$2" name="$3" archive="$4" entrypoint="$5" uid="$6"
  [[ -x "${dir}/${bin}" ]] || die "${dir}/${bin} was not built"
  printf 'FROM scratch\nCOPY %s /%s\nUSER %s\nENTRYPOINT [%s]\n' "${bin}" "${bin}" "${uid}" "${entrypoint}" > "${dir}/Containerfile"
  podman build --quiet --pull=never --format oci -f "${dir}/Containerfile" -t "${name}" "${dir}" >/dev/null
  podman save --quiet --format oci-archive -o "${archive}" "${name}"
  log "image ${name}: $(du -h "${archive}" | cut -f1)"
}

# The Gateway API conformance suite (`pnpm conformance`, e2e/node/conformance.test.ts): a Go
# test binary built from conformance/ (a module requiring sigs.k8s.io/gateway-api/conformance at
# the gatewayApi version), cached like the other tools.
install_conformance_suite() {
  need_cmd go "install Go 1.26"
  bash "${REPO_ROOT}/conformance/build-suite.sh" >/dev/null
  log "Gateway API conformance suite $(version gatewayApi): cached in ${CACHE}/gateway-api-conformance-$(version gatewayApi)"
}

# The local Node 26 base image of the project's images (`pnpm images`), for machines without
# registry access: Debian's packages and the official Node binary (images/base/).
install_local_images() {
  if (( EUID != 0 )); then
    log "skipping the local Node base image (needs root for mmdebstrap); \`pnpm images\` then uses docker.io/library/node:26-slim"
    return 0
  fi
  bash "${REPO_ROOT}/images/base/build-node-base.sh"
}

# The Gateway API CRDs at the gatewayApi version, taken from the Go module the conformance suite
# is built from (sigs.k8s.io/gateway-api, checked against conformance/go.sum): config/crd's
# standard and experimental channels, CRDs only (the bundle's ValidatingAdmissionPolicy, which
# refuses experimental CRDs over standard ones, is left out), with the project's LICENSE.
#   ${CACHE}/gateway-api-crds-<v>/{standard,experimental}/*.yaml
install_gateway_api_crds() {
  local ver dest dir channel
  ver="$(version gatewayApi)"
  dest="${CACHE}/gateway-api-crds-${ver}"
  if [[ -f "${dest}/standard/gateway.networking.k8s.io_httproutes.yaml" && -f "${dest}/experimental/gateway.networking.k8s.io_httproutes.yaml" ]]; then
    log "Gateway API CRDs ${ver}: cached in ${dest}"
    return 0
  fi
  need_cmd go "install Go 1.26"
  grep -qE "^sigs\.k8s\.io/gateway-api ${ver//./\\.} h1:" "${REPO_ROOT}/conformance/go.sum" \
    || die "conformance/go.sum has no sigs.k8s.io/gateway-api ${ver} (e2e/tools.json gatewayApi); update both together"
  dir="$(env -C "${REPO_ROOT}/conformance" go mod download -json "sigs.k8s.io/gateway-api@${ver}" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s);if(m.Error){console.error(m.Error);process.exit(1)}process.stdout.write(m.Dir)})')"
  [[ -d "${dir}/config/crd/standard" ]] || die "sigs.k8s.io/gateway-api@${ver} has no config/crd/standard"
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  for channel in standard experimental; do
    mkdir -p "${dest}.tmp/${channel}"
    find "${dir}/config/crd/${channel}" -maxdepth 1 -name 'gateway.networking*.yaml' ! -name '*_vap_*' -exec cp {} "${dest}.tmp/${channel}/" \;
  done
  cp "${dir}/LICENSE" "${dest}.tmp/LICENSE"
  chmod -R u+w "${dest}.tmp"
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  log "Gateway API CRDs ${ver}: $(ls "${dest}/standard" | wc -l) standard, $(ls "${dest}/experimental" | wc -l) experimental, in ${dest}"
}

# envoy-proto (e2e/tools/envoy-proto): Envoy API messages decoded and encoded by the official Go
# types (go-control-plane, generated from Envoy's .proto files), so the tests check the project's
# own codecs against Envoy's definitions. Cached by version and source hash.
install_envoy_proto() {
  install_wrapper_tool envoy-proto goControlPlane github.com/envoyproxy/go-control-plane/envoy envoy-proto "envoy-proto (go-control-plane)"
}

# install_wrapper_tool NAME VERSION_KEY MODULE BINARY WHAT: a tool built from the wrapper module
# e2e/tools/NAME, which requires MODULE at e2e/tools.json's VERSION_KEY; cached by that version
# and the hash of the wrapper's source as NAME-<version>-<key>/BINARY.
install_wrapper_tool() {
  local name="$1" version_key="$2" module="$3" binary="$4" what="$5" ver dir key dest
  ver="$(version "${version_key}")"
  dir="${REPO_ROOT}/e2e/tools/${name}"
  key="$(cat "${dir}/main.go" "${dir}/go.mod" | sha256sum | cut -c1-12)"
  dest="${CACHE}/${name}-${ver}-${key}"
  cached "${what} ${ver}" "${dest}/${binary}" && return 0
  check_module_version "${dir}" "${module}" "${ver}"
  go_build "go build ${what} ${ver}" "${dest}" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "${dest}.tmp/${binary}" .
  finish_build "${dest}"
}

install_etcd() {
  local ver dest dir
  ver="$(version etcd)"
  dest="${CACHE}/etcd-${ver}"
  dir="${REPO_ROOT}/e2e/tools/etcd"
  cached "etcd ${ver}" "${dest}/etcd" && return 0
  check_module_version "${dir}" go.etcd.io/etcd/server/v3 "${ver}"
  go_build "go build etcd ${ver} from the Go module proxy" "${dest}" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "${dest}.tmp/etcd" go.etcd.io/etcd/server/v3
  finish_build "${dest}"
  "${dest}/etcd" --version >&2
}

install_helm() {
  local ver dest
  ver="$(version helm)"
  dest="${CACHE}/helm-${ver}"
  cached "helm ${ver}" "${dest}/helm" && return 0
  # helm reports its version from these variables in release builds.
  go_build "go install helm ${ver}" "${dest}" \
    env GOBIN="${dest}.tmp" CGO_ENABLED=0 go install -trimpath -gcflags=all=-dwarf=false \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${ver} -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
      "helm.sh/helm/v3/cmd/helm@${ver}"
  finish_build "${dest}"
  "${dest}/helm" version --short >&2
}

# envoyproxy/ratelimit, the reference Envoy RLS v3 service, built from a pinned commit
# (a Go pseudo-version in e2e/tools.json: envoyRatelimit). go install names the binary
# after its package (service_cmd); the cache keeps it as `ratelimit`.
install_ratelimit() {
  local ver dest
  ver="$(version envoyRatelimit)"
  dest="${CACHE}/ratelimit-${ver}"
  cached "envoyproxy/ratelimit ${ver}" "${dest}/ratelimit" && return 0
  go_build "go install envoyproxy/ratelimit ${ver}" "${dest}" \
    env GOBIN="${dest}.tmp" CGO_ENABLED=0 go install -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
      "github.com/envoyproxy/ratelimit/src/service_cmd@${ver}"
  mv "${dest}.tmp/service_cmd" "${dest}.tmp/ratelimit"
  finish_build "${dest}"
  log "envoyproxy/ratelimit ${ver}: installed in ${dest}"
}

# OPA with an Envoy external authorization plugin (e2e/tools/opa-envoy): the real `opa` command
# (server, health API, Rego evaluation) at the opaEnvoy version, serving
# envoy.service.auth.v3.Authorization over gRPC with the configuration and decision contract of
# OPA's Envoy plugin, for packages/proxy/test/auth-ext-authz.test.ts. Cached by version and
# source hash as opa-envoy-<version>-<key>/opa.
install_opa_envoy() {
  install_wrapper_tool opa-envoy opaEnvoy github.com/open-policy-agent/opa opa "OPA with the Envoy ext_authz plugin"
}

# Dex, the OpenID Connect provider of the oidc tests (packages/proxy/test/auth-oidc.test.ts),
# built from the wrapper module e2e/tools/dex at e2e/tools.json's dex (a pseudo-version: the Go
# module proxy serves Dex as pseudo-versions only, and its module path has no /v2). Dex replaces
# its own api module with a directory of its repository, which a dependency's replace cannot
# do, so the wrapper requires github.com/dexidp/dex/api/v2 at the same commit. The proxy serves
# that version's .mod and .zip but refuses its .info (403), which go asks for first: a local
# file proxy in the cache holds the three (the .info written here), in front of the usual one;
# go.sum pins the zip's hash, so what go builds is what was reviewed. Cached by version and the
# hash of go.mod and go.sum as dex-<version>-<key>/dex.
install_dex() {
  local ver dir key dest api files
  ver="$(version dex)"
  dir="${REPO_ROOT}/e2e/tools/dex"
  key="$(cat "${dir}/go.mod" "${dir}/go.sum" | sha256sum | cut -c1-12)"
  dest="${CACHE}/dex-${ver}-${key}"
  cached "Dex ${ver}" "${dest}/dex" && return 0
  check_module_version "${dir}" github.com/dexidp/dex "${ver}"
  api="$(sed -nE 's#^[[:space:]]*github\.com/dexidp/dex/api/v2 (v[^ ]+).*#\1#p' "${dir}/go.mod")"
  [[ -n "${api}" ]] || die "${dir}/go.mod does not require github.com/dexidp/dex/api/v2"
  files="${CACHE}/dex-modproxy/github.com/dexidp/dex/api/v2/@v"
  mkdir -p "${files}"
  for ext in mod zip; do
    [[ -s "${files}/${api}.${ext}" ]] || curl -fsSL -o "${files}/${api}.${ext}" "https://proxy.golang.org/github.com/dexidp/dex/api/v2/@v/${api}.${ext}" \
      || die "could not download github.com/dexidp/dex/api/v2@${api}.${ext} from the Go module proxy"
  done
  printf '{"Version":"%s"}\n' "${api}" >"${files}/${api}.info"
  printf '%s\n' "${api}" >"${files}/list"
  go_build "go build Dex ${ver}" "${dest}" \
    env -C "${dir}" GOPROXY="file://${CACHE}/dex-modproxy,$(go env GOPROXY)" GOFLAGS=-mod=readonly CGO_ENABLED=0 \
      go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "${dest}.tmp/dex" github.com/dexidp/dex/cmd/dex
  finish_build "${dest}"
  log "Dex ${ver}: installed in ${dest}"
}

# ext-proc (e2e/tools/ext-proc): an Envoy external processor on the official Go types
# (go-control-plane at goControlPlane) that rewrites headers and bodies, answers immediately on
# a marker header and misbehaves on demand, for packages/proxy/test/ext-proc*.test.ts and the
# extProc e2e. Cached by version and source hash as ext-proc-<version>-<key>/ext-proc.
install_ext_proc() {
  install_wrapper_tool ext-proc goControlPlane github.com/envoyproxy/go-control-plane/envoy ext-proc "ext-proc (go-control-plane)"
}

# The official Python openai client (PyPI, pinned in e2e/tools.json: pythonOpenai) in a venv of
# its own; the tests run <dest>/python, written only once pip succeeded, so an interrupted install
# is never taken for a cached one.
install_python_openai() {
  local ver dest
  ver="$(version pythonOpenai)"
  dest="${CACHE}/python-openai-${ver}"
  cached "openai (Python) ${ver}" "${dest}/python" && return 0
  need_cmd python3 "install python3 and python3-venv"
  rm -rf "${dest}" && mkdir -p "${dest}"
  python3 -m venv "${dest}/venv" || die "python3 -m venv failed (install python3-venv)"
  with_progress "pip install openai==${ver}" \
    "${dest}/venv/bin/python" -m pip install --quiet --disable-pip-version-check "openai==${ver}"
  # A wrapper, not a link: Python finds its venv from the path it is started by.
  printf '#!/bin/sh\nexec "%s/venv/bin/python" "$@"\n' "${dest}" >"${dest}/python"
  chmod +x "${dest}/python"
  log "openai (Python) ${ver}: $("${dest}/python" -c 'import openai; print(openai.__version__)') in ${dest}"
}

# in_parallel "f1 f2" "f3" ...: runs each group of install functions (in order within the
# group) as a background job and waits for all of them; fails naming the groups that failed.
# The Go builds are independent: beside the longest one (Kubernetes) the others fill the
# cores while it downloads modules or links, and the base image's downloads overlap both.
in_parallel() {
  local pids=() groups=() failed=() i
  for group in "$@"; do
    # shellcheck disable=SC2086 # a group is a list of function names
    ( set -e; for f in ${group}; do "${f}"; done ) &
    pids+=($!); groups+=("${group}")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${groups[$i]}")
  done
  (( ${#failed[@]} == 0 )) || die "failed: ${failed[*]}"
}

main() {
  local start=$SECONDS
  need_cmd node "install Node 26, or source scripts/env.sh"
  mkdir -p "${CACHE}"
  log "cache: ${CACHE}"
  install_apt_packages
  if command -v redis-server >/dev/null 2>&1; then log "redis-server: $(redis-server --version | head -n1)"; fi
  in_parallel install_kube \
    "install_gateway_api_crds install_envoy_proto install_python_openai install_etcd install_helm install_ratelimit install_opa_envoy install_dex install_ext_proc install_node_images install_conformance_suite" \
    install_local_images
  log "all test tools installed in $((SECONDS - start))s"
}

main "$@"
