#!/usr/bin/env bash
# `pnpm images`: builds the tollgate, tollgate-controller and mock-llm images with podman, and
# the e2e node's test-tool image opa when its binary is built.
#
#   bash images/build-images.sh [tollgate|tollgate-controller|mock-llm|opa|ext-proc ...]
#
# Each image is <repository>/<name>:<version of its package>, with the repository
# ${TOLLGATE_IMAGE_REPOSITORY:-ghcr.io/tollgate-dev} (the chart's default image names; the
# chart's default tag is its appVersion, the same version).
#
# Base image: ${TOLLGATE_BASE_IMAGE} when set; else tollgate.local/node:26 when it exists
# (images/base/build-node-base.sh builds it, and scripts/install-test-tools.sh runs that);
# else the official docker.io/library/node:26-slim, pulled if missing.
#
# The build context of each image is its package deployed with production dependencies only
# (`pnpm deploy --prod`) into a temporary directory; nothing is installed inside the build, so
# the build needs no network. A test-tool image (opa) is the binary scripts/install-test-tools.sh
# built from e2e/tools/<tool> (cached as <tool>-<version>-<key of its sources>), alone, tagged
# tollgate.local/<tool>:<version>; skipped, saying why, when the binary is not there.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=podman-env.sh
source "${REPO_ROOT}/images/podman-env.sh"

REPOSITORY="${TOLLGATE_IMAGE_REPOSITORY:-ghcr.io/tollgate-dev}"
LOCAL_BASE="tollgate.local/node:26"
OFFICIAL_BASE="docker.io/library/node:26-slim"

log() { printf '[images %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v podman >/dev/null || die "podman is required (apt-get install podman)"

# name -> package directory and npm package name
declare -A DIR=([tollgate]=packages/proxy [tollgate-controller]=packages/controller [mock-llm]=packages/mock-llm)
declare -A PKG=([tollgate]=@tollgate/proxy [tollgate-controller]=@tollgate/controller [mock-llm]=@tollgate/mock-llm)
# test-tool image name -> its wrapper module under e2e/tools/, its version key in e2e/tools.json, its binary
declare -A TOOL=([opa]=opa-envoy [ext-proc]=ext-proc)
declare -A TOOL_VERSION=([opa]=opaEnvoy [ext-proc]=goControlPlane)
declare -A TOOL_BINARY=([opa]=opa [ext-proc]=ext-proc)
# name -> the image's description; each is a target of images/Containerfile
declare -A DESCRIPTION=([tollgate]='Tollgate gateway proxy for LLM traffic' [tollgate-controller]='Tollgate controller: Gateway API implementation for LLM traffic' [mock-llm]='OpenAI-compatible mock LLM backend for tests, demos and benchmarks')

names=("$@")
(( ${#names[@]} )) || names=(tollgate tollgate-controller mock-llm opa ext-proc)
for n in "${names[@]}"; do
  [[ -n "${DIR[$n]:-}" || -n "${TOOL[$n]:-}" ]] || die "unknown image ${n} (images: tollgate, tollgate-controller, mock-llm, opa, ext-proc)"
done

if [[ -n "${TOLLGATE_BASE_IMAGE:-}" ]]; then
  base="${TOLLGATE_BASE_IMAGE}"; pull=missing
elif podman image exists "${LOCAL_BASE}"; then
  base="${LOCAL_BASE}"; pull=never
else
  base="${OFFICIAL_BASE}"; pull=missing
fi
log "base image: ${base}"

revision="$(git -C "${REPO_ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)"
[[ -z "$(git -C "${REPO_ROOT}" status --porcelain --untracked-files=no 2>/dev/null)" ]] || revision="${revision}-dirty"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

stage="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-images.XXXXXX")"
trap 'rm -rf "${stage}"' EXIT

log "pnpm build"
(cd "${REPO_ROOT}" && pnpm --silent build)

# tool_image NAME: the test-tool image NAME from its cached binary; prints the image, or
# nothing (and why, on stderr) when the tool is not in this checkout or not built.
tool_image() {
  local n="$1" tool="${TOOL[$1]}" src ver key bin image
  src="${REPO_ROOT}/e2e/tools/${tool}"
  ver="$(node -p 'require(process.argv[1])[process.argv[2]] ?? ""' "${REPO_ROOT}/e2e/tools.json" "${TOOL_VERSION[$n]}")"
  if [[ -z "${ver}" || ! -f "${src}/main.go" ]]; then
    log "skipping ${n}: e2e/tools/${tool} (version ${TOOL_VERSION[$n]} in e2e/tools.json) is not in this checkout"
    return 0
  fi
  # The key of scripts/install-test-tools.sh's install_wrapper_tool: its sources' hash.
  key="$(cat "${src}/main.go" "${src}/go.mod" | sha256sum | cut -c1-12)"
  bin="${TOLLGATE_CACHE:-${HOME}/.cache/tollgate}/${tool}-${ver}-${key}/${TOOL_BINARY[$n]}"
  if [[ ! -x "${bin}" ]]; then
    log "skipping ${n}: ${bin} is not built (bash scripts/install-test-tools.sh)"
    return 0
  fi
  image="tollgate.local/${tool}:${ver}"
  mkdir -p "${stage}/${n}" && cp "${bin}" "${stage}/${n}/${TOOL_BINARY[$n]}"
  log "${n}: podman build ${image}"
  podman build --quiet --pull=never --format oci \
    --annotation "org.opencontainers.image.title=${tool}" --annotation "org.opencontainers.image.version=${ver}" \
    -f "${REPO_ROOT}/images/Containerfile" --target "${n}" -t "${image}" "${stage}/${n}" >/dev/null
  log "${n}: ${image} ($(podman image inspect --format '{{.Size}}' "${image}" | awk '{printf "%.0f MB", $1/1e6}'))"
  printf '%s\n' "${image}"
}

built=()
for n in "${names[@]}"; do
  if [[ -n "${TOOL[$n]:-}" ]]; then
    image="$(tool_image "${n}")"
    [[ -n "${image}" ]] && built+=("${image}")
    continue
  fi
  dir="${REPO_ROOT}/${DIR[$n]}"
  if [[ ! -f "${dir}/package.json" ]]; then
    log "skipping ${n}: ${DIR[$n]} does not exist in this checkout"
    continue
  fi
  # Packages outside the root build script (tsc -b) are built here.
  [[ -f "${dir}/tsconfig.json" ]] && (cd "${REPO_ROOT}" && node_modules/.bin/tsc -b "${DIR[$n]}")
  version="$(node -p 'require(process.argv[1]).version' "${dir}/package.json")"
  image="${REPOSITORY}/${n}:${version}"
  log "${n}: staging ${PKG[$n]} with production dependencies"
  (cd "${REPO_ROOT}" && pnpm --silent --filter "${PKG[$n]}" deploy --legacy --prod --config.confirmModulesPurge=false "${stage}/${n}" >/dev/null)
  # Native addons ship prebuilt binaries for every platform; the image needs only its own.
  while IFS= read -r -d '' prebuilds; do
    for p in "${prebuilds}"/*; do [[ "${p##*/}" == linux-x64* ]] || rm -rf "${p}"; done
  done < <(find -L "${stage}/${n}/node_modules" -type d -name prebuilds -print0 2>/dev/null)
  find "${stage}/${n}" -name '*.map' -type f -delete
  previous="$(podman image inspect --format '{{.Id}}' "${image}" 2>/dev/null || true)"
  log "${n}: podman build ${image}"
  podman build --quiet --pull="${pull}" --format oci \
    --build-arg "BASE_IMAGE=${base}" \
    --build-arg "VERSION=${version}" --build-arg "REVISION=${revision}" --build-arg "CREATED=${created}" \
    --build-arg "TITLE=${n}" --build-arg "DESCRIPTION=${DESCRIPTION[$n]}" \
    --annotation "org.opencontainers.image.title=${n}" \
    --annotation "org.opencontainers.image.version=${version}" \
    --annotation "org.opencontainers.image.revision=${revision}" \
    --annotation "org.opencontainers.image.created=${created}" \
    --annotation "org.opencontainers.image.base.name=${base}" \
    -f "${REPO_ROOT}/images/Containerfile" --target "${n}" -t "${image}" "${stage}/${n}" >/dev/null
  # The image this build replaced is left untagged; remove it unless a container uses it.
  current="$(podman image inspect --format '{{.Id}}' "${image}")"
  [[ -n "${previous}" && "${previous}" != "${current}" ]] && { podman rmi "${previous}" >/dev/null 2>&1 || true; }
  size="$(podman image inspect --format '{{.Size}}' "${image}" | awk '{printf "%.0f MB", $1/1e6}')"
  log "${n}: ${image} (${size})"
  built+=("${image}")
done
printf '%s\n' "${built[@]}"
