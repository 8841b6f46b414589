// The Secrets and ConfigMaps the controller reads whole (translate/references.ts) are exactly
// the ones translation needs: for every golden case, translating with only the referenced ones
// gives the same snapshots and status as translating with every one the case holds. And a
// Secret of another namespace is read only once a ReferenceGrant lets the Gateway use it.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { referencedObjects } from '../src/translate/references.js';
import { kindOf } from '../src/watch/kinds.js';
import { metadataOnly } from '../src/watch/metadata-watch.js';
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

  it('a policy’s Secrets are wanted by name where it may read them, and by its selector in its namespace only; a Secret whose labels exceed the bound is chosen by no selector', () => {
    const r = parseResources(readFileSync(`${dir}policy-auth-api-keys.in.yaml`, 'utf8'), 'policy-auth-api-keys.in.yaml');
    const wanted = referencedObjects(r, CONTROLLER_NAME);
    expect([...wanted.Secret].sort()).toEqual(['team/key-alice', 'team/key-bob', 'team/key-carol', 'team/key-dave', 'team/no-key']);
    expect(wanted.secretSelectors).toEqual([{ namespace: 'team', matchLabels: { 'tollgate.dev/api-key': 'team-a' } }]);
    // The cache's view of a Secret with many labels keeps none, and translation reads the whole one alike.
    const heavy = { metadata: { name: 'key-heavy', namespace: 'team', labels: { 'tollgate.dev/api-key': 'team-a', ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`l${i}.example.com/x`, 'v'.repeat(63)])) } } };
    const cached = metadataOnly(kindOf('Secret'), heavy);
    expect(cached.metadata?.labels).toBeUndefined();
    expect(metadataOnly(kindOf('Secret'), r.secrets.find((s) => s.metadata?.name === 'key-dave')!).metadata?.labels).toEqual({ 'tollgate.dev/api-key': 'team-a', tier: 'silver' });
    expect(referencedObjects({ ...r, secrets: [...r.secrets, cached] }, CONTROLLER_NAME).Secret.has('team/key-heavy')).toBe(false);
    const whole = { ...r, secrets: [...r.secrets, { apiVersion: 'v1', kind: 'Secret', ...heavy, data: { key: Buffer.from('k').toString('base64') } }] };
    expect(referencedObjects(whole, CONTROLLER_NAME).Secret.has('team/key-heavy')).toBe(false);
    expect(renderResult(translate(whole, caseOptions('')))).toBe(renderResult(translate(r, caseOptions(''))));
  });

  it('the CA bundles of spec.tls.frontend are wanted where the Gateway may read them, ConfigMaps and Secrets alike', () => {
    const valid = parseResources(readFileSync(`${dir}gateway-frontend-validation.in.yaml`, 'utf8'), 'gateway-frontend-validation.in.yaml');
    const wanted = referencedObjects(valid, CONTROLLER_NAME);
    expect([...wanted.ConfigMap].sort()).toEqual(['default/clients-ca', 'default/does-not-exist']);
    expect(wanted.Secret.has('default/partners-ca')).toBe(true);
    const invalid = parseResources(readFileSync(`${dir}gateway-frontend-validation-invalid.in.yaml`, 'utf8'), 'gateway-frontend-validation-invalid.in.yaml');
    const cms = referencedObjects(invalid, CONTROLLER_NAME).ConfigMap;
    expect(cms.has('granted/ca')).toBe(true);
    // No ReferenceGrant lets the Gateway read it: never read whole.
    expect(cms.has('certs/ca')).toBe(false);
    expect(referencedObjects({ ...invalid, referenceGrants: [] }, CONTROLLER_NAME).ConfigMap.has('granted/ca')).toBe(false);
  });

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
