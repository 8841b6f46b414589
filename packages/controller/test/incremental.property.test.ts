// Property: translate() reuses work for objects that are the same objects as in an earlier
// call (informer caches keep unchanged objects), or that echo them (a status write). Whatever
// mix of kept, copied, echoed, relabelled, edited, added and deleted objects follows, the output
// equals that of a translation from fresh copies.
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
    return { name: f, text, options: caseOptions(text) };
  });

type Mutable = Record<string, unknown> & { spec?: Record<string, unknown>; metadata: Record<string, unknown> };

/** An edit a user might make to an object of this kind (on a copy). */
function edit(kind: string, o: Mutable, n: number): void {
  const spec = o.spec as Record<string, unknown[] | Record<string, unknown> | undefined> | undefined;
  o.metadata.generation = ((o.metadata.generation as number | undefined) ?? 1) + 1;
  switch (kind) {
    case 'endpointSlices': {
      const eps = o.endpoints as { addresses: string[]; conditions?: { ready?: boolean } }[];
      if (eps[0]) eps[0].conditions = { ready: n % 2 === 0 };
      if (n % 3 === 0) eps.push({ addresses: [`198.18.9.${n % 200}`] });
      break;
    }
    case 'services': {
      const ports = (spec?.ports ?? []) as { port: number }[];
      if (ports[0]) ports[0].port = n % 2 ? 81 : 80;
      break;
    }
    case 'httpRoutes': {
      const rules = (spec?.rules ?? []) as { backendRefs?: { weight?: number }[] }[];
      const ref = rules[0]?.backendRefs?.[0];
      if (ref) ref.weight = n % 4;
      if (n % 3 === 0) (o.spec as Record<string, unknown>).hostnames = [n % 2 ? 'a.example.com' : '*.example.com'];
      break;
    }
    case 'gatewayPolicies': {
      const local = ((spec?.traffic as { rateLimit?: { local?: { requests?: number }[] } } | undefined)?.rateLimit?.local ?? [])[0];
      if (local?.requests) local.requests = 1 + (n % 50);
      break;
    }
    case 'gateways': {
      const l = (spec?.listeners as { hostname?: string }[] | undefined)?.[0];
      if (l) l.hostname = n % 2 ? 'a.example.com' : undefined;
      break;
    }
    case 'namespaces':
      o.metadata.labels = { env: n % 2 ? 'prod' : 'dev', 'gateway-access': 'yes' };
      break;
    case 'secrets': {
      // A key rotated or revoked, a Secret relabelled in or out of a policy's selector.
      const data = (o.data ?? {}) as Record<string, string>;
      o.data = n % 3 === 0 ? {} : { ...data, key: Buffer.from(`rotated-${n}`).toString('base64') };
      if (n % 2) o.metadata.labels = { ...(o.metadata.labels ?? {}), 'tollgate.dev/api-key': n % 4 === 1 ? 'team-a' : 'team-b' };
      break;
    }
    case 'configMaps':
      o.data = n % 2 ? {} : { ...(o.data ?? {}), 'jwks.json': '{"keys":[]}' };
      break;
    default:
      break;
  }
}

describe('translate reuse across calls (property)', () => {
  // Many runs of many steps: on a loaded machine (a CI run) longer than the default test timeout.
  it('kept, replaced and edited objects give the output of a fresh translation, at every step of a chain', { timeout: 180_000 }, () => {
    const step = fc.tuple(fc.nat(), fc.constantFrom('keep', 'copy', 'edit', 'echo', 'label', 'add', 'delete'), fc.nat());
    fc.assert(
      fc.property(fc.nat({ max: inputs.length - 1 }), fc.array(fc.array(step, { minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 4 }), (index, rounds) => {
        const c = inputs[index]!;
        const first = parseResources(c.text, c.name);
        translate(first, c.options); // warms the caches with these objects
        const next = Object.fromEntries(Object.entries(first).map(([k, list]) => [k, [...(list as unknown[])]])) as unknown as Record<keyof Resources, unknown[]>;
        const kinds = Object.keys(next) as (keyof Resources)[];
        // The warm translations follow one another (what each keeps for the next is used); the
        // fresh ones come after, from copies of the objects at each step.
        const chain: { warm: string; at: Resources }[] = [];
        for (const steps of rounds) {
          for (const [pick, action, n] of steps) {
            const kind = kinds[pick % kinds.length]!;
            const list = next[kind];
            if (!list.length || action === 'keep') continue;
            const i = n % list.length;
            if (action === 'delete') {
              list.splice(i, 1);
              continue;
            }
            const copy = structuredClone(list[i]) as Mutable;
            if (action === 'add') {
              // Another object like it, under a new name: put at a place of the list (the informer's
              // order is not the key order) and, for a route, at its place in the precedence order.
              copy.metadata = { ...copy.metadata, name: `${String(copy.metadata.name)}-a${n % 7}`, uid: `added-${n}` };
              if (n % 2) copy.metadata.creationTimestamp = new Date(Date.UTC(2026, 0, 1, 0, 0, n % 60)).toISOString();
              list.splice(n % (list.length + 1), 0, copy);
              continue;
            }
            if (action === 'edit') edit(kind, copy, n);
            // The echo of a status write (taken as the object it echoes), or a label: a new object with the same spec.
            if (action === 'echo') Object.assign(copy, { status: { observed: n } }, { metadata: { ...copy.metadata, resourceVersion: String(1000 + n) } });
            if (action === 'label') copy.metadata.labels = { ...((copy.metadata.labels) ?? {}), touched: String(n % 3) };
            list[i] = copy;
          }
          const now = Object.fromEntries(Object.entries(next).map(([k, list]) => [k, [...list]])) as unknown as Resources;
          chain.push({ warm: resultBytes(translate(now, c.options)), at: structuredClone(now) });
        }
        for (const { warm, at } of chain) expect(warm).toBe(resultBytes(translate(at, c.options)));
      }),
      { numRuns: 300 },
    );
  });
});
