#!/usr/bin/env bash
# `pnpm images`: builds the tollgate, tollgate-controller and mock-llm images with podman.
#
#   bash images/build-images.sh [tollgate|tollgate-controller|mock-llm ...]
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
# the build needs no network.
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
# name -> the image's description; each is a target of images/Containerfile
declare -A DESCRIPTION=([tollgate]='Tollgate gateway proxy for LLM traffic' [tollgate-controller]='Tollgate controller: Gateway API implementation for LLM traffic' [mock-llm]='OpenAI-compatible mock LLM backend for tests, demos and benchmarks')

names=("$@")
(( ${#names[@]} )) || names=(tollgate tollgate-controller mock-llm)
for n in "${names[@]}"; do
  [[ -n "${DIR[$n]:-}" ]] || die "unknown image ${n} (images: tollgate, tollgate-controller, mock-llm)"
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

built=()
for n in "${names[@]}"; do
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
