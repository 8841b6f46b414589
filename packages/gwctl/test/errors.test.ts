// Failures: one `gwctl: ...` line on stderr and the documented exit code for each kind —
// bad flags (2), no kubeconfig (3), API server unreachable (4), no pod (5), port-forward
// failure (6), admin unreachable (7), input files (9), inject request failed (10). Pod
// selection and the port-forward failure are also run against a real kube-apiserver in
// e2e/gwctl-cluster.test.ts; here a small HTTP stand-in for the API server answers.
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    expectOneLine(r, new RegExp(`^gwctl: cannot list pods in namespace "edge" \\(server http://127\\.0\\.0\\.1:${port}\\): .*ECONNREFUSED`));
  });
});

describe('pod resolution and port-forward against an API server stand-in', () => {
  let api: Server;
  let file: string;
  const seen: string[] = [];
  const pod = (name: string, phase: string, ready: boolean) => ({
    metadata: { name, namespace: 'edge', labels: { 'gateway.networking.k8s.io/gateway-name': 'public' } },
    status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
  beforeAll(async () => {
    api = createServer((req, res) => {
      seen.push(req.url ?? '');
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/portforward')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ kind: 'Status', status: 'Failure', message: 'pod public-b does not have a host assigned', code: 400 }));
      }
      const ns = url.pathname.split('/')[4];
      const selector = url.searchParams.get('labelSelector');
      let items: unknown[] = [];
      if (ns === 'edge' && selector === 'gateway.networking.k8s.io/gateway-name=public') items = [pod('public-c', 'Pending', false), pod('public-b', 'Running', true), pod('public-a', 'Running', false)];
      if (ns === 'edge' && selector === 'gateway.networking.k8s.io/gateway-name=starting') items = [pod('starting-a', 'Running', false), pod('starting-b', 'Pending', false)];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items }));
    });
    api.listen(0, '127.0.0.1');
    await once(api, 'listening');
    file = await kubeconfig(`http://127.0.0.1:${(api.address() as AddressInfo).port}`);
  });
  afterAll(() => {
    api.closeAllConnections();
    api.close();
  });

  it('no pod with the label: exit 5 naming namespace and selector', async () => {
    const r = await gwctl(['config', 'all', 'gateway/missing', '--kubeconfig', file, '-n', 'other']);
    expect(r.code).toBe(5);
    expectOneLine(r, /^gwctl: no gateway\/missing pod in namespace "other" has the label gateway\.networking\.k8s\.io\/gateway-name=missing \(wrong namespace\? use -n\)$/m);
  });

  it('pods, none Running and Ready: exit 5 listing them', async () => {
    const r = await gwctl(['config', 'all', 'gateway/starting', '--kubeconfig', file]);
    expect(r.code).toBe(5);
    expectOneLine(r, /^gwctl: no Running and Ready gateway\/starting pod in namespace "edge" with the label gateway\.networking\.k8s\.io\/gateway-name=starting \(2 found: starting-a Running but not Ready, starting-b Pending\)$/m);
  });

  it('picks the Running and Ready pod (the context namespace by default); a refused port-forward is exit 6 with the reason', async () => {
    seen.length = 0;
    const r = await gwctl(['config', 'all', 'gateway/public', '--kubeconfig', file]);
    expect(seen[0]).toBe('/api/v1/namespaces/edge/pods?labelSelector=gateway.networking.k8s.io%2Fgateway-name%3Dpublic');
    expect(seen[1]).toBe('/api/v1/namespaces/edge/pods/public-b/portforward?ports=15000');
    expect(r.code).toBe(6);
    expectOneLine(r, /^gwctl: port-forward to pod edge\/public-b port 15000 failed: pod public-b does not have a host assigned \(HTTP 400\)$/m);
  });

  it('controller log looks in tollgate-system by the chart\'s labels and forwards port 9095', async () => {
    seen.length = 0;
    const r = await gwctl(['controller', 'log', '--kubeconfig', file]);
    expect(seen[0]).toBe('/api/v1/namespaces/tollgate-system/pods?labelSelector=app.kubernetes.io%2Fname%3Dtollgate%2Capp.kubernetes.io%2Fcomponent%3Dcontroller');
    expect(r.code).toBe(5);
    expectOneLine(r, /^gwctl: no controller pod in namespace "tollgate-system" has the label app\.kubernetes\.io\/name=tollgate,app\.kubernetes\.io\/component=controller/);
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
