// Failures: one `gwctl: ...` line on stderr and the documented exit code for each kind —
// bad flags (2), no kubeconfig (3), API server unreachable (4), admin unreachable (7), input
// files (9), inject request failed (10). The Gateway lookup (12), pod selection (5) and the
// port-forward failure (6) run against a real kube-apiserver in e2e/gwctl-cluster.test.ts,
// RBAC refusals (4) in e2e/gwctl-rbac.test.ts.
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort, gwctl, gwctlBin, requireBuild } from './helpers.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gwctl-errors-'));
});

function expectOneLine(r: { stderr: string; stdout: string }, re: RegExp) {
  expect(r.stdout).toBe('');
  expect(r.stderr.split('\n').length, r.stderr).toBe(2);
  expect(r.stderr).toMatch(re);
}

async function kubeconfig(server: string, extra: Record<string, unknown> = {}): Promise<string> {
  const file = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'test' } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'edge' } }],
      'current-context': 'ctx',
      ...extra,
    }),
  );
  return file;
}

describe('bad flags: exit 2', () => {
  const cases: [string[], RegExp][] = [
    [['trace', '--bogus'], /^gwctl: unknown option '--bogus'/],
    [['config', 'all'], /^gwctl: missing target: gateway\/<name> \(in a cluster\) or --local/],
    [['log', 'gateway/a', '--local'], /^gwctl: give either gateway\/a or --local, not both/],
    [['log', 'gateway/a', '--admin-addr', '127.0.0.1:1'], /^gwctl: --admin-addr needs --local/],
    [['log', 'pod/a'], /^gwctl: expected the target gateway\/<name>, got 'pod\/a'/],
    [['log', `gateway/${'a'.repeat(254)}`], /^gwctl: the Gateway name in gateway\/a{32}… is 254 characters long; a Kubernetes name has at most 253$/m],
    [['log', '--local', '-n', 'x'], /^gwctl: --namespace applies to cluster targets, not --local/],
    [['log', '--local', '--admin-addr', 'nope'], /^gwctl: --admin-addr must be <host>:<port>, got 'nope'/],
    [['log', '--local', '--admin-addr', '127.0.0.1:99999'], /^gwctl: --admin-addr must be <host>:<port>, got '127\.0\.0\.1:99999': port 99999 is out of range; expected a port from 1 to 65535$/m],
    [['trace', '--local', '--raw', '--port', '0', '--', 'http://h/'], /^gwctl: option '--port <listener_port>' argument '0' is invalid/],
    [['trace', '--local', '--raw', '--port', '80'], /^gwctl: --port needs a request after it/],
    [['trace', '--local', '--raw', '--', 'http://h/'], /^gwctl: inject mode needs --port/],
    [['trace', '--local'], /^gwctl: the trace terminal UI needs a terminal on stdin and stdout; use --raw/],
    [['config', 'all', '--local', '-o', 'xml'], /^gwctl: option '-o, --output <format>' argument 'xml' is invalid/],
    [['config', 'all', '--local', '--', 'http://h/'], /^gwctl: arguments after -- are only for trace inject mode/],
    [['config', 'backends', '--local', '--file', 'x.json'], /^gwctl: --file renders a saved dump; give no --local with it/],
    [['controller', 'log', '--level', 'chatty', '--local'], /^gwctl: --level must be one of error, warn, info, debug, trace, got 'chatty'/],
    [['nosuch'], /^gwctl: unknown command 'nosuch'/],
    [['log', 'gateway/a', 'gateway/b'], /^gwctl: too many arguments/],
  ];
  for (const [args, re] of cases) {
    it(args.join(' '), async () => {
      const r = await gwctl(args);
      expect(r.code).toBe(2);
      expectOneLine(r, re);
    });
  }
});

describe('kubeconfig: exit 3', () => {
  it('no kubeconfig at all', async () => {
    const r = await gwctl(['config', 'all', 'gateway/public'], { env: { HOME: '/nonexistent-home' } });
    expect(r.code).toBe(3);
    expectOneLine(r, /^gwctl: no kubeconfig found \(\/nonexistent-home\/\.kube\/config does not exist\); set KUBECONFIG, pass --kubeconfig, or use --local/);
  });

  it('KUBECONFIG naming no existing file, --kubeconfig naming a missing file, a missing context', async () => {
    const env = { KUBECONFIG: '/nonexistent/a:/nonexistent/b' };
    const a = await gwctl(['trace', 'gateway/public', '--raw'], { env });
    expect(a.code).toBe(3);
    expectOneLine(a, /^gwctl: no kubeconfig: none of the files in KUBECONFIG \(\/nonexistent\/a:\/nonexistent\/b\) exists/);
    const b = await gwctl(['log', 'gateway/public', '--kubeconfig', '/nonexistent/kc']);
    expectOneLine(b, /^gwctl: kubeconfig \/nonexistent\/kc does not exist$/m);
    const file = await kubeconfig('https://127.0.0.1:1');
    const c = await gwctl(['log', 'gateway/public', '--kubeconfig', file, '--context', 'prod']);
    expect(c.code).toBe(3);
    expectOneLine(c, /^gwctl: context "prod" is not in the kubeconfig \(contexts: ctx\)/);
  });
});

describe('API server unreachable: exit 4', () => {
  it('names the namespace and the server', async () => {
    const port = await freePort();
    const file = await kubeconfig(`http://127.0.0.1:${port}`);
    const r = await gwctl(['config', 'backends', 'gateway/public', '--kubeconfig', file]);
    expect(r.code).toBe(4);
    expectOneLine(r, new RegExp(`^gwctl: cannot get Gateway public in namespace "edge" \\(server http://127\\.0\\.0\\.1:${port}\\): .*ECONNREFUSED`));
    const controller = await gwctl(['controller', 'log', '--kubeconfig', file]);
    expect(controller.code).toBe(4);
    expectOneLine(controller, new RegExp(`^gwctl: cannot list pods in namespace "tollgate-system" \\(server http://127\\.0\\.0\\.1:${port}\\): .*ECONNREFUSED`));
  });
});

describe('admin unreachable (7), input files (9), inject request failed (10)', () => {
  it('exit 7 naming the address', async () => {
    const port = await freePort();
    const r = await gwctl(['config', 'all', '--local', '--admin-addr', `127.0.0.1:${port}`]);
    expect(r.code).toBe(7);
    expectOneLine(r, new RegExp(`^gwctl: cannot reach the admin server at 127\\.0\\.0\\.1:${port}: connect ECONNREFUSED .*--admin-addr sets the address\\)$`, 'm'));
  });

  it('exit 9 for a missing, non-JSON or wrongly shaped dump', async () => {
    const missing = await gwctl(['config', 'all', '--file', join(dir, 'none.json')]);
    expect(missing.code).toBe(9);
    expectOneLine(missing, /^gwctl: cannot read .*none\.json: ENOENT/);
    const notJson = join(dir, 'not.json');
    await writeFile(notJson, 'routes: []');
    const b = await gwctl(['config', 'all', '--file', notJson]);
    expect(b.code).toBe(9);
    expectOneLine(b, /^gwctl: .*not\.json is not JSON: /);
    const shape = join(dir, 'shape.json');
    await writeFile(shape, JSON.stringify({ routes: [], policies: [], backends: [{ name: 'x', endpoints: [{ address: 'a', health: '1' }] }] }));
    const c = await gwctl(['config', 'backends', '--file', shape]);
    expect(c.code).toBe(9);
    expectOneLine(c, /^gwctl: .*shape\.json is not a \/config_dump body: backends\[0\]\.endpoints\[0\]\.health must be a number$/m);
  });
});

describe('the binary', () => {
  beforeAll(() => requireBuild());

  it('--help on every command exits 0 and shows examples', async () => {
    // The commands' help is main()'s (in-process: one node start per command would take a
    // loaded machine tens of seconds); the binary is started once, for its own wiring.
    for (const args of [['trace'], ['config', 'all'], ['config', 'backends'], ['log'], ['controller', 'log'], ['proxy', 'trace'], ['proxy', 'config', 'backends']]) {
      const r = await gwctl([...args, '--help']);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toContain('Examples:');
    }
    const top = await gwctlBin(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('Examples:');
    expect(top.stdout).toContain('Exit codes:\n  0    success');
    expect(top.stdout).toContain('130  interrupted (Ctrl-C)');
  });

  it('passes exit codes through; no command at all is a usage error', async () => {
    const r = await gwctlBin(['log', '--local', '--admin-addr', `127.0.0.1:${await freePort()}`]);
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/^gwctl: cannot reach the admin server/);
    expect((await gwctlBin([])).code).toBe(2);
  });

  it('inject mode to a port nothing listens on: exit 10', async () => {
    // An admin server is needed to arm the trace first: a real proxy is started by the
    // local suite; here the stand-in is a server that arms and never answers events.
    const admin = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': trace session 1 armed; waiting for the next request\n\n');
    });
    admin.listen(0, '127.0.0.1');
    await once(admin, 'listening');
    const port = await freePort();
    const r = await gwctlBin(['trace', '--local', '--admin-addr', `127.0.0.1:${(admin.address() as AddressInfo).port}`, '--raw', '--port', String(port), '--', 'http://api.example.com/']);
    admin.closeAllConnections();
    admin.close();
    expect(r.code).toBe(10);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`gwctl: request to 127.0.0.1:${port} failed: connect ECONNREFUSED 127.0.0.1:${port} (is a listener on --port ${port}?)\n`);
  });
});
