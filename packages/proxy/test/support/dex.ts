// Dex, a real OpenID Connect provider, for the oidc tests: the `dex` binary
// scripts/install-test-tools.sh builds (e2e/tools/dex, Dex at e2e/tools.json's dex), started on
// a free loopback port with one static password user and one static client whose redirect URI
// is the gateway's callback; ready when its discovery document answers. Its storage is etcd
// (the test-tools etcd, on free loopback ports): Dex's memory and SQLite storages deadlock on a
// refresh at this version (UpdateRefreshToken holds the store's only lock or connection while
// the refresh reads the offline session), etcd's does not.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdArgs } from '@tollgate/testkit';
import { onFreePorts } from '../helpers.js';
import { Proc, readyOrStopped } from './process.js';
import { REPO_ROOT, toolAvailability, wrapperToolBinary } from './tool-cache.js';

export function dexBinary(): string {
  return process.env.TOLLGATE_DEX ?? wrapperToolBinary('dex', 'dex', 'dex', ['go.mod', 'go.sum']);
}

function etcdBinary(): string {
  const tools = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as Record<string, string>;
  return join(process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate'), `etcd-${tools.etcd}`, 'etcd');
}

export function dexAvailability(): { run: boolean } {
  const dex = toolAvailability('Dex', dexBinary());
  return dex.run ? toolAvailability('etcd (Dex\'s storage)', etcdBinary()) : dex;
}

async function etcdHealthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

export const DEX_USER = { email: 'admin@example.com', password: 'password', userID: '08a8684b-db88-4b73-90a9-3cd1661f5466', username: 'admin' };
/** bcrypt of DEX_USER.password (Dex's own example hash). */
const PASSWORD_HASH = '$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W';

export interface Dex {
  /** http://127.0.0.1:<port>/dex */
  readonly issuer: string;
  /** `127.0.0.1:<port>` */
  readonly address: string;
  stop(): Promise<void>;
}

export interface DexClient {
  readonly id: string;
  readonly secret: string;
  readonly redirectURIs: readonly string[];
}

async function discoveryAnswers(issuer: string): Promise<boolean> {
  try {
    const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Starts Dex with `client`; ID tokens live `idTokens` (a Go duration). */
export async function startDex(client: DexClient, idTokens = '1h'): Promise<Dex> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-dex-'));
  const procs: Proc[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const port = await onFreePorts(3, async ([p, clientPort, peer]) => {
      const etcdUrl = `http://127.0.0.1:${clientPort}`;
      const peerUrl = `http://127.0.0.1:${peer}`;
      const etcd = new Proc('etcd', spawn(etcdBinary(), etcdArgs(join(dir, 'etcd'), etcdUrl, peerUrl), { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
      await readyOrStopped(etcd, procs, 'health', () => etcdHealthy(etcdUrl));
      const issuer = `http://127.0.0.1:${p}/dex`;
      const config = {
        issuer,
        storage: { type: 'etcd', config: { endpoints: [etcdUrl], namespace: 'dex/' } },
        web: { http: `127.0.0.1:${p}` },
        logger: { level: process.env.TOLLGATE_DEX_LOG ?? 'error' },
        oauth2: { skipApprovalScreen: true },
        expiry: { idTokens },
        enablePasswordDB: true,
        staticPasswords: [{ ...DEX_USER, hash: PASSWORD_HASH }],
        staticClients: [{ id: client.id, secret: client.secret, name: 'Tollgate test', redirectURIs: client.redirectURIs }],
      };
      const file = join(dir, 'config.json');
      await writeFile(file, JSON.stringify(config));
      const proc = new Proc('dex', spawn(dexBinary(), ['serve', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
      if (process.env.TOLLGATE_DEX_LOG) proc.child.stderr?.pipe(process.stderr);
      await readyOrStopped(proc, procs, 'discovery document', () => discoveryAnswers(issuer));
      return p!;
    });
    return { issuer: `http://127.0.0.1:${port}/dex`, address: `127.0.0.1:${port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
