// The Secrets and ConfigMaps the controller reads whole (translate/references.ts) are exactly
// the ones translation needs: for every golden case, translating with only the referenced ones
// gives the same snapshots and status as translating with every one the case holds. And a
// Secret of another namespace is read only once a ReferenceGrant lets the Gateway use it.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { referencedObjects } from '../src/translate/references.js';
import { CONTROLLER_NAME, caseOptions, parseResources, renderResult } from './support.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));
const cases = readdirSync(dir).filter((f) => f.endsWith('.in.yaml')).sort();
const key = (o: { metadata?: { namespace?: string; name?: string } }) => `${o.metadata?.namespace}/${o.metadata?.name}`;

describe('referenced objects', () => {
  for (const file of cases) {
    it(`${file}: translation needs no Secret or ConfigMap beyond the referenced ones`, () => {
      const text = readFileSync(`${dir}${file}`, 'utf8');
      const all = parseResources(text, file);
      const options = caseOptions(text);
      const wanted = referencedObjects(all, options.controllerName);
      const only = { ...all, secrets: all.secrets.filter((s) => wanted.Secret.has(key(s))), configMaps: all.configMaps.filter((c) => wanted.ConfigMap.has(key(c))) };
      expect(renderResult(translate(only, options))).toBe(renderResult(translate(all, options)));
    });
  }

  it('a Secret in another namespace is wanted only with a ReferenceGrant, and only for a Gateway of our class', () => {
    const text = readFileSync(`${dir}listener-https-reference-grant-specific.in.yaml`, 'utf8');
    const r = parseResources(text, 'listener-https-reference-grant-specific.in.yaml');
    const granted = referencedObjects(r, CONTROLLER_NAME).Secret;
    const ungranted = referencedObjects({ ...r, referenceGrants: [] }, CONTROLLER_NAME).Secret;
    const crossNamespace = [...granted].filter((k) => !ungranted.has(k));
    expect(crossNamespace.length).toBeGreaterThan(0);
    expect(referencedObjects(r, 'example.com/another-controller').Secret.size).toBe(0);
  });
});
