// Envoy API messages through the official Go types (e2e/tools/envoy-proto, go-control-plane
// generated from Envoy's .proto files), for tests that check the project's own codecs against
// Envoy's definitions instead of against themselves. scripts/install-test-tools.sh builds it
// into the tool cache (keyed by the go-control-plane version and the tool's source).
import { execFileSync } from 'node:child_process';
import { toolAvailability, wrapperToolBinary } from './tool-cache.js';

export function envoyProtoBinary(): string {
  return wrapperToolBinary('envoy-proto', 'goControlPlane', 'envoy-proto');
}

export function envoyProtoAvailability(): { run: boolean } {
  return toolAvailability('envoy-proto', envoyProtoBinary());
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
