// The command line of a single-member etcd for tests, on loopback URLs the caller chose, its
// data in `dataDir`, without fsync (a test's data need not survive a power cut).
export function etcdArgs(dataDir: string, clientUrl: string, peerUrl: string): string[] {
  return [
    '--name=default',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}
