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
  # openssl: the e2e harness makes the cluster's CA and client certificates.
  # tmux: the gwctl terminal UI test drives the UI in a real pseudo-terminal.
  apt_install ca-certificates openssl tmux
}

install_kube() {
  local ver staging dest dir
  ver="$(version kubernetes)"
  staging="$(version kubernetesStaging)"
  dest="${CACHE}/kubernetes-${ver}"
  dir="${REPO_ROOT}/e2e/tools/kube"
  if [[ -x "${dest}/kube-apiserver" && -x "${dest}/kubectl" ]]; then
    log "kube-apiserver and kubectl ${ver}: cached in ${dest}"
    return 0
  fi
  check_module_version "${dir}" k8s.io/kubernetes "${ver}"
  grep -q "k8s.io/apiserver => k8s.io/apiserver ${staging}" "${dir}/go.mod" \
    || die "${dir}/go.mod does not replace the staging modules with ${staging}"
  need_cmd go "install Go 1.26"
  local major minor pkg
  major="${ver#v}"; major="${major%%.*}"
  minor="${ver#v*.}"; minor="${minor%%.*}"
  local build_date
  build_date="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
  # The same version variables Kubernetes' release build sets, so that
  # clients (kubectl version, discovery) see a real server version.
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${ver} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done
  log "building kube-apiserver and kubectl ${ver} from the Go module proxy (a cold build takes 7-16 min on 2 cores)"
  mkdir -p "${dest}.tmp"
  with_progress "go build kube-apiserver ${ver}" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${dest}.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  with_progress "go build kubectl ${ver}" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${dest}.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  "${dest}/kube-apiserver" --version >&2
}

install_etcd() {
  local ver dest dir
  ver="$(version etcd)"
  dest="${CACHE}/etcd-${ver}"
  dir="${REPO_ROOT}/e2e/tools/etcd"
  if [[ -x "${dest}/etcd" ]]; then
    log "etcd ${ver}: cached in ${dest}"
    return 0
  fi
  check_module_version "${dir}" go.etcd.io/etcd/server/v3 "${ver}"
  need_cmd go "install Go 1.26"
  log "building etcd ${ver} from the Go module proxy"
  mkdir -p "${dest}.tmp"
  with_progress "go build etcd ${ver}" \
    env -C "${dir}" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${dest}.tmp/etcd" go.etcd.io/etcd/server/v3
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  "${dest}/etcd" --version >&2
}

install_helm() {
  local ver dest
  ver="$(version helm)"
  dest="${CACHE}/helm-${ver}"
  if [[ -x "${dest}/helm" ]]; then
    log "helm ${ver}: cached in ${dest}"
    return 0
  fi
  need_cmd go "install Go 1.26"
  log "building helm ${ver} (go install)"
  mkdir -p "${dest}.tmp"
  # helm reports its version from these variables in release builds.
  with_progress "go install helm ${ver}" \
    env GOBIN="${dest}.tmp" CGO_ENABLED=0 go install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${ver} -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
      "helm.sh/helm/v3/cmd/helm@${ver}"
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  "${dest}/helm" version --short >&2
}

# redis-server from Debian: the store behind envoyproxy/ratelimit in the global rate
# limit tests (packages/proxy/test/support/rls.ts starts one on a free loopback port).
install_redis() {
  if command -v redis-server >/dev/null 2>&1; then
    log "redis-server: $(redis-server --version | head -n1)"
    return 0
  fi
  apt_install redis-server
  # The Debian package may start a system-wide redis on :6379; the tests start their own.
}

# envoyproxy/ratelimit, the reference Envoy RLS v3 service, built from a pinned commit
# (a Go pseudo-version in e2e/tools.json: envoyRatelimit). go install names the binary
# after its package (service_cmd); the cache keeps it as `ratelimit`.
install_ratelimit() {
  local ver dest
  ver="$(version envoyRatelimit)"
  dest="${CACHE}/ratelimit-${ver}"
  if [[ -x "${dest}/ratelimit" ]]; then
    log "envoyproxy/ratelimit ${ver}: cached in ${dest}"
    return 0
  fi
  need_cmd go "install Go 1.26"
  log "building envoyproxy/ratelimit ${ver} (go install)"
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  with_progress "go install envoyproxy/ratelimit ${ver}" \
    env GOBIN="${dest}.tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
      "github.com/envoyproxy/ratelimit/src/service_cmd@${ver}"
  mv "${dest}.tmp/service_cmd" "${dest}.tmp/ratelimit"
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  log "envoyproxy/ratelimit ${ver}: installed in ${dest}"
}

main() {
  local start=$SECONDS
  need_cmd node "install Node 20"
  mkdir -p "${CACHE}"
  log "cache: ${CACHE}"
  install_apt_packages
  install_etcd
  install_helm
  install_redis
  install_ratelimit
  install_kube
  log "all test tools installed in $((SECONDS - start))s"
}

main "$@"
