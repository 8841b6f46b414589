# Sourced by the image and test scripts: points podman at a containers.conf with the settings
# this project needs, written under the tool cache, without touching /etc/containers:
#   - runc (crun refuses hybrid cgroup v1 hosts);
#   - ulimits no higher than a sandboxed process may set (podman's default 1048576 fails
#     where the hard nofile limit is lower);
#   - a default network "tollgate" on 198.18.200.0/24 (never podman's 10.88.0.0/16): a bare
#     bridge, no masquerading and no default route in the containers, so nothing they send
#     leaves the machine. The host reaches containers at their address on the bridge; there
#     is no port publishing plugin, so podman adds no iptables rules;
#   - never pull: every image is built here.
# Exports CONTAINERS_CONF. Usage: source images/podman-env.sh
TOLLGATE_PODMAN_DIR="${TOLLGATE_CACHE:-${HOME}/.cache/tollgate}/podman"
TOLLGATE_PODMAN_SUBNET="198.18.200.0/24"
TOLLGATE_PODMAN_GATEWAY="198.18.200.1"

tollgate_podman_conf() {
  local nofile
  nofile="$(ulimit -Hn)"
  [[ "${nofile}" == unlimited ]] && nofile=1048576
  (( nofile > 65536 )) && nofile=65536
  mkdir -p "${TOLLGATE_PODMAN_DIR}/networks"
  cat > "${TOLLGATE_PODMAN_DIR}/containers.conf.tmp" <<CONF
# Written by images/podman-env.sh; edits are overwritten.
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=4096:4096"]

[engine]
runtime = "runc"
pull_policy = "never"

[network]
network_backend = "cni"
network_config_dir = "${TOLLGATE_PODMAN_DIR}/networks"
default_network = "tollgate"
default_subnet = "${TOLLGATE_PODMAN_SUBNET}"
CONF
  mv "${TOLLGATE_PODMAN_DIR}/containers.conf.tmp" "${TOLLGATE_PODMAN_DIR}/containers.conf"
  # The network is written out rather than left to podman's default, which masquerades and
  # gives containers a default route.
  cat > "${TOLLGATE_PODMAN_DIR}/networks/tollgate.conflist.tmp" <<CONF
{
  "cniVersion": "0.4.0",
  "name": "tollgate",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "tg-podman0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "routes": [{ "dst": "198.18.0.0/15" }],
        "ranges": [[{ "subnet": "${TOLLGATE_PODMAN_SUBNET}", "gateway": "${TOLLGATE_PODMAN_GATEWAY}" }]]
      }
    }
  ]
}
CONF
  mv "${TOLLGATE_PODMAN_DIR}/networks/tollgate.conflist.tmp" "${TOLLGATE_PODMAN_DIR}/networks/tollgate.conflist"
}

tollgate_podman_conf
export CONTAINERS_CONF="${TOLLGATE_PODMAN_DIR}/containers.conf"
