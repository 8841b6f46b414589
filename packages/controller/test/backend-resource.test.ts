// What the controller writes of a Backend's provider key: the snapshot a proxy receives holds
// it (the stream reveals it), every rendering meant for people or disk does not: the golden
// output (as the admin /snapshots renders it), JSON of the snapshot, the status report.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { encodeSnapshot, snapshotProblems, toWire } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { caseOptions, parseResources, renderResult } from './support.js';

const KEY = 'sk-golden-provider-key-0001';
const B64 = Buffer.from(KEY).toString('base64');

describe('a Backend\'s provider key', () => {
  const text = readFileSync(fileURLToPath(new URL('../testdata/backend-resource.in.yaml', import.meta.url)), 'utf8');
  const result = translate(parseResources(text, 'backend-resource.in.yaml'), caseOptions(text));
  const snapshot = result.snapshots.get('infra/gw')!;

  it('travels to the proxies in the stream encoding, and the snapshot is one a proxy accepts', () => {
    expect(encodeSnapshot(snapshot)).toContain(KEY);
    expect(JSON.stringify(toWire(snapshot))).toContain(KEY);
    expect(snapshotProblems(snapshot)).toEqual([]);
  });

  it('is in no rendering for people or disk: the snapshot as JSON, the golden output, the status', () => {
    for (const out of [JSON.stringify(snapshot), renderResult(result), JSON.stringify([...result.status.backends!])]) {
      expect(out).not.toContain(KEY);
      expect(out).not.toContain(B64);
    }
  });

  it('a rotated Secret is a new snapshot version', () => {
    const rotated = text.replace(B64, Buffer.from('sk-golden-provider-key-0002').toString('base64'));
    const next = translate(parseResources(rotated, 'rotated'), caseOptions(rotated)).snapshots.get('infra/gw')!;
    expect(next.version).not.toBe(snapshot.version);
    expect(encodeSnapshot(next)).toContain('sk-golden-provider-key-0002');
  });
});

describe('examples/providers-backends.yaml', () => {
  it('reads strictly and translates: both Backends accepted once their Secrets exist', () => {
    const example = readFileSync(fileURLToPath(new URL('../../../examples/providers-backends.yaml', import.meta.url)), 'utf8');
    const r = parseResources(example, 'providers-backends.yaml');
    const secret = (name: string, namespace: string) => ({ apiVersion: 'v1' as const, kind: 'Secret' as const, metadata: { name, namespace }, data: { apiKey: Buffer.from('sk-example').toString('base64') } });
    const out = translate({ ...r, secrets: [secret('openai-key', 'team'), secret('azure-key', 'providers')] }, caseOptions(''));
    expect([...out.status.backends!.values()].map((b) => [b.name, b.conditions[0]!.status])).toEqual([
      ['azure', 'True'],
      ['openai', 'True'],
    ]);
  });
});
