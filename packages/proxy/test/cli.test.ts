// The `tollgate` binary: start-up lines, --help/--version, exit codes, invalid configs
// (each refused before anything listens, naming the field) and a port in use. Its drain on
// SIGTERM is drain.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli.js';
import { issueTestCertificate } from '@tollgate/testkit';
import { send, simpleConfig, startUpstream } from './helpers.js';
import { BIN, configFile, OPS, PROCESS_TIMEOUT_MS, tollgateProcesses } from './support/tollgate-child.js';

class Exited extends Error {
  constructor(readonly code: number | null) {
    super(`exit ${code}`);
  }
}

/** main() in this process, for what it says before it starts anything: the exit code and stderr. */
async function runHere(args: string[]): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const exit = vi.spyOn(process, 'exit').mockImplementation((code?: string | number | null) => {
    throw new Exited(code === undefined || code === null ? null : Number(code));
  });
  try {
    await main(args);
    return { code: 0, stderr };
  } catch (err) {
    if (err instanceof Exited) return { code: err.code, stderr };
    throw err;
  } finally {
    write.mockRestore();
    exit.mockRestore();
  }
}

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

// Every test here starts tollgate processes.
const start = tollgateProcesses();

describe('tollgate CLI', { timeout: PROCESS_TIMEOUT_MS }, () => {
  it('--help and --version', async () => {
    // Started together: each process start waits for CPU on a loaded machine.
    const [help, version] = await Promise.all([run(['--help']), run(['--version'])]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('tollgate --file <config.yaml|config.json>');
    expect(help.stdout).toContain('Examples:');
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^tollgate \d+\.\d+\.\d+\n$/);
  });

  it('bad usage exits 2 with one line naming the problem', async () => {
    // The binary once, for its exit code and stderr; the other cases through the same main()
    // in this process (a process start costs about a second of CPU, tens of seconds of wall
    // time on the loaded CI machine).
    const [unknown, missing, noFile] = [await run(['--nope']), await runHere([]), await runHere(['-f', '/nonexistent/config.yaml'])];
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--nope'");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing --file');
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toContain('cannot read config file /nonexistent/config.yaml: no such file');
  });

  it('an address flag out of range exits 2 naming the flag and the range', async () => {
    const r = await run(['-f', '/nonexistent/config.yaml', '--metrics-addr', '127.0.0.1:99999']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('tollgate: --metrics-addr: got "127.0.0.1:99999"; port 99999 is out of range; expected a port from 0 to 65535 (0 picks a free port)\n');
  });

  it('--workers takes a count from 1 to 64 or auto; anything else exits 2 naming the flag', async () => {
    for (const bad of ['0', '65', 'two', '1.5', '']) {
      const r = await runHere(['-f', '/nonexistent/config.yaml', '--workers', bad]);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`tollgate: --workers: got "${bad}"; give a whole number from 1 to 64, or auto (the CPUs the container may use)\n`);
    }
    // A good value passes the flag check and fails on the missing file instead.
    for (const good of ['1', '64', 'auto']) expect((await runHere(['-f', '/nonexistent/config.yaml', '--workers', good])).stderr).toContain('cannot read config file');
  });

  it('logs the admin address and one line per bind, and serves', async () => {
    const up = await startUpstream();
    try {
      const { child, lines, ports, admin } = await start(
        ([p1, p2]) => ({
          binds: [
            { port: p1, listeners: [{ name: 'one', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: up.host }] }] }] },
            { port: p2, listeners: [{ name: 'two', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: up.host }] }] }] },
          ],
        }),
        2,
      );
      const [p1, p2] = ports as [number, number];
      expect(admin).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(lines.map((l) => l.msg)).toEqual(
        expect.arrayContaining([`admin listening on http://${admin}`, expect.stringMatching(new RegExp(`^bind 0\\.0\\.0\\.0:${p1} listening`)), expect.stringMatching(new RegExp(`^bind 0\\.0\\.0\\.0:${p2} listening`))]),
      );
      expect((await send(`http://127.0.0.1:${p2}/x`)).status).toBe(200);
      child.kill('SIGTERM');
      expect((await once(child, 'exit'))[0]).toBe(0);
    } finally {
      await up.close();
    }
  });

  const port = 1; // never bound: each config below is refused before listening
  const route = (extra: Record<string, unknown>) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:9000' }], ...extra }]);
  const cases: [string, unknown, string][] = [
    ['unknown top-level field', { ...simpleConfig(port, []), extra: 1 }, 'extra: unknown field'],
    ['wrong type', { binds: 'none' }, 'binds: got string "none"; expected array'],
    ['port out of range', simpleConfig(70000, []), 'binds[0].port: got 70000; expected a number <= 65535'],
    ['bad enum', { binds: [{ port, listeners: [{ name: 'l', protocol: 'TCP', routes: [] }] }] }, 'binds[0].listeners[0].protocol: got "TCP"; expected one of: HTTP'],
    ['missing field', { binds: [{ port, listeners: [{ name: 'l', protocol: 'HTTP' }] }] }, 'binds[0].listeners[0].routes: required field is missing'],
    ['bad backend address', simpleConfig(port, [{ name: 'r', backends: [{ host: 'localhost' }] }]), 'routes[0].backends[0].host: got "localhost"; expected <host>:<port>'],
    ['bad hostname', route({ hostnames: ['Bad_Host'] }), 'routes[0].hostnames[0]: got "Bad_Host"; expected a lower-case DNS name'],
    ['bad duration', route({ timeouts: { request: '5 seconds' } }), 'routes[0].timeouts.request: got "5 seconds"; expected a duration'],
    ['bad regex', route({ matches: [{ path: { type: 'RegularExpression', value: '(' } }] }), 'routes[0].matches[0].path.value: got "(": not a valid regular expression'],
    ['relative path', route({ matches: [{ path: { type: 'Exact', value: 'x' } }] }), 'routes[0].matches[0].path.value: got "x"; expected an absolute path'],
    ['filter field mismatch', route({ filters: [{ type: 'URLRewrite', requestRedirect: {} }] }), 'routes[0].filters[0].urlRewrite: required when type is URLRewrite'],
    ['rate limit both kinds', route({ policies: { traffic: { rateLimit: { local: [{ requests: 1, tokens: 1, unit: 'Minutes' }] } } } }), 'rateLimit.local[0]: sets both requests and tokens'],
    ['rate limit unit', route({ policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Weeks' }] } } } }), 'rateLimit.local[0].unit: got "Weeks"; expected one of: Seconds, Minutes, Hours, Days, Months'],
    ['local Months', route({ policies: { traffic: { rateLimit: { local: [{ tokens: 1, unit: 'Months' }] } } } }), 'rateLimit.local[0].unit: Months is not available for a local limit'],
    ['duplicate route', simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1' }] }, { name: 'r', backends: [{ host: '127.0.0.1:1' }] }]), 'routes[1].name: duplicate route name "r"'],
    ['no backends', route({ backends: [] }), 'routes[0].backends: is empty; add a backend'],
    ['not YAML', 'binds: [ {', 'config.yaml is invalid'],
    ['empty file', '', 'the file is empty'],
    ['unknown log module', { config: { logLevel: 'info,nosuch=debug' }, binds: [] }, 'config.logLevel: got "info,nosuch=debug": unknown module "nosuch"; expected one of proxy,'],
  ];
  it.each(cases)('refuses a config with %s, naming the field, exit 2', async (_name, content, expected) => {
    const file = await configFile(content);
    const r = await run(['-f', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(expected);
    expect(r.stdout).toBe('');
  });

  it('--check validates without listening', async () => {
    const ok = await run(['--check', '-f', fileURLToPath(new URL('../../../examples/standalone.yaml', import.meta.url))]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/standalone\.yaml: valid \(version [0-9a-f]{12}\)/);
    const bad = await run(['--check', '-f', await configFile(simpleConfig(0, []))]);
    expect(bad.code).toBe(2);
  });

  it('--check reads certificate files: a key of another certificate is exit 2 naming the field, an expired certificate a warning', async () => {
    const file = await configFile('');
    const dir = dirname(file);
    const expired = issueTestCertificate({ commonName: 'old.test', notBefore: new Date('2020-01-01T00:00:00Z'), notAfter: new Date('2021-01-01T00:00:00Z') });
    const other = issueTestCertificate({ commonName: 'other.test' });
    await writeFile(join(dir, 'old.crt'), expired.cert);
    await writeFile(join(dir, 'old.key'), expired.key);
    await writeFile(join(dir, 'other.key'), other.key);
    const https = (keyFile: string) => ({ binds: [{ port: 8443, listeners: [{ name: 'l', protocol: 'HTTPS', tls: { certificates: [{ certFile: 'old.crt', keyFile }] }, routes: [] }] }] });
    await writeFile(file, stringify(https('other.key')));
    const bad = await run(['--check', '-f', file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`binds[0].listeners[0].tls.certificates[0].keyFile: ${join(dir, 'other.key')} does not belong to the certificate (subject CN=old.test)`);
    await writeFile(file, stringify(https('old.key')));
    const warned = await run(['--check', '-f', file]);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toBe('tollgate: warning: binds[0].listeners[0].tls.certificates[0].certFile: certificate CN=old.test expired at 2021-01-01T00:00:00.000Z; clients will refuse it until it is renewed\n');
  });

  it('a port in use, or an address not of this machine, is one line naming the bind and its listener, exit 1', async () => {
    const blocker = await startUpstream();
    try {
      const inUse = await configFile(simpleConfig(blocker.port, [{ name: 'r', backends: [{ host: blocker.host }] }]));
      // 198.19.255.254: a test-range address no interface here has.
      const elsewhere = await configFile({ binds: [{ port: blocker.port, address: '198.19.255.254', listeners: [{ name: 'edge', protocol: 'HTTP', routes: [] }] }] });
      const [a, b] = await Promise.all([run(['-f', inUse, '--admin-addr', '127.0.0.1:0', ...OPS]), run(['-f', elsewhere, '--admin-addr', '127.0.0.1:0', ...OPS])]);
      expect(a.code).toBe(1);
      expect(a.stderr).toBe(`tollgate: bind 0.0.0.0:${blocker.port} (listener main) is already in use; stop the other process on port ${blocker.port} or change binds[].port [TG_BIND_IN_USE]\n`);
      expect(b.code).toBe(1);
      expect(b.stderr).toBe(
        `tollgate: bind 198.19.255.254:${blocker.port} (listener edge): cannot listen on 198.19.255.254: it is not an address of this machine (EADDRNOTAVAIL); change binds[].address [TG_BIND_FAILED]\n`,
      );
    } finally {
      await blocker.close();
    }
  });

});
