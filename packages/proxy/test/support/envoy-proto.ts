// Envoy API messages through the official Go types (e2e/tools/envoy-proto, go-control-plane
// generated from Envoy's .proto files), for tests that check the project's own codecs against
// Envoy's definitions instead of against themselves. scripts/install-test-tools.sh builds it
// into the tool cache (keyed by the go-control-plane version and the tool's source).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

export function envoyProtoBinary(): string {
  const tools = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as Record<string, string>;
  const dir = join(REPO_ROOT, 'e2e/tools/envoy-proto');
  const key = createHash('sha256').update(readFileSync(join(dir, 'main.go'))).update(readFileSync(join(dir, 'go.mod'))).digest('hex').slice(0, 12);
  const cache = process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate');
  return join(cache, `envoy-proto-${tools.goControlPlane}-${key}`, 'envoy-proto');
}

/** Whether the tool is there: in CI a missing tool is an error; elsewhere the suite is skipped, saying how to install it. */
export function envoyProtoAvailability(): { run: boolean } {
  if (existsSync(envoyProtoBinary())) return { run: true };
  const message = `envoy-proto is not built: ${envoyProtoBinary()} (run \`bash scripts/install-test-tools.sh\`)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping: ${message}`);
  return { run: false };
}

/** The message's fields (and those of the messages it uses) as Envoy defines them. */
export type Described = Record<string, Record<string, { number: number; kind: string; repeated: boolean; type?: string }>>;

export function describeMessages(...names: string[]): Described {
  return JSON.parse(execFileSync(envoyProtoBinary(), ['describe', ...names], { encoding: 'utf8' })) as Described;
}

/** Binary -> protojson (proto field names) by the official types; throws on fields Envoy does not define. */
export function officialDecode(message: string, bytes: Uint8Array): Record<string, unknown> {
  return JSON.parse(execFileSync(envoyProtoBinary(), ['decode', message], { input: bytes, encoding: 'utf8' })) as Record<string, unknown>;
}

/** protojson -> binary by the official types. */
export function officialEncode(message: string, json: unknown): Buffer {
  return execFileSync(envoyProtoBinary(), ['encode', message], { input: JSON.stringify(json) });
}
