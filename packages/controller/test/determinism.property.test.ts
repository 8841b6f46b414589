// Property: translate() depends on the objects, never on their order. Every golden input,
// with every list shuffled, gives byte-identical output (snapshots with secrets, and status).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import type { Resources } from '../src/translate/types.js';
import { caseOptions, parseResources, resultBytes } from './support.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));
const inputs = readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .sort()
  .map((f) => {
    const text = readFileSync(`${dir}${f}`, 'utf8');
    return { name: f, resources: parseResources(text, f), options: caseOptions(text) };
  });

/** Reorders `list` by the random keys (ties keep their order, so any permutation is reachable). */
function permute<T>(list: readonly T[], keys: readonly number[]): T[] {
  return list
    .map((item, i) => ({ item, key: keys[i % Math.max(keys.length, 1)] ?? 0, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map((x) => x.item);
}

function shuffled(r: Resources, keys: readonly number[]): Resources {
  const rot = (offset: number) => keys.map((k, i) => keys[(i + offset) % keys.length] ?? k);
  return {
    gatewayClasses: permute(r.gatewayClasses, rot(1)),
    gateways: permute(r.gateways, rot(2)),
    listenerSets: permute(r.listenerSets ?? [], rot(11)),
    backends: permute(r.backends, rot(3)),
    httpRoutes: permute(r.httpRoutes, rot(3)),
    grpcRoutes: permute(r.grpcRoutes, rot(3)),
    tlsRoutes: permute(r.tlsRoutes ?? [], rot(4)),
    referenceGrants: permute(r.referenceGrants, rot(4)),
    gatewayPolicies: permute(r.gatewayPolicies, rot(5)),
    backendTLSPolicies: permute(r.backendTLSPolicies, rot(5)),
    services: permute(r.services, rot(6)),
    endpointSlices: permute(r.endpointSlices, rot(7)),
    namespaces: permute(r.namespaces, rot(8)),
    secrets: permute(r.secrets, rot(9)),
    configMaps: permute(r.configMaps, rot(10)),
  };
}

describe('translate determinism (property)', () => {
  it('gives the same bytes for any order of the same objects', () => {
    const expected = inputs.map((c) => resultBytes(translate(c.resources, c.options)));
    fc.assert(
      fc.property(fc.nat({ max: inputs.length - 1 }), fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 40 }), (index, keys) => {
        const c = inputs[index]!;
        expect(resultBytes(translate(shuffled(c.resources, keys), c.options))).toBe(expected[index]);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same bytes on a second run over the same objects (no state kept between calls)', () => {
    for (const c of inputs) expect(resultBytes(translate(c.resources, c.options))).toBe(resultBytes(translate(c.resources, c.options)));
  });
});
