// apiKey conversion: a standalone key file or a cluster's Secrets to digests, every bad entry
// named by its index or its Secret and never by its key; the IR travels the snapshot wire with
// its digests and dumps only their prefixes.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  NO_SOURCES,
  decodeSnapshot,
  encodeSnapshot,
  standaloneToSnapshot,
  toApiKeyIR,
  validateStandaloneConfig,
  type ApiKeyConfig,
  type PolicySources,
  type Problem,
  type SourceObject,
} from '../src/index.js';

const AT = 'spec.traffic.apiKey';
const KEY = 'sk-0123456789abcdef';

/** Sources over in-memory text and Secrets: the conversion reads nothing else. */
function sources(files: Record<string, string>, secrets: SourceObject[] = []): PolicySources {
  return {
    ...NO_SOURCES,
    text: (at, ref) => ('file' in ref && ref.file in files ? { ok: true, value: { origin: `file ${ref.file}`, text: files[ref.file]! } } : NO_SOURCES.text(at, ref)),
    secrets: () => ({ ok: true, value: secrets }),
  };
}

function convert(config: ApiKeyConfig, src: PolicySources) {
  const problems: Problem[] = [];
  const ir = toApiKeyIR(config, AT, src, problems);
  return { ir, problems: problems.map((p) => `${p.path}: ${p.message}`) };
}

const fromFile = (entries: unknown, extra: Partial<ApiKeyConfig> = {}) => convert({ file: 'keys.yaml', ...extra }, sources({ 'keys.yaml': typeof entries === 'string' ? entries : stringify(entries) }));

describe('apiKey from a key file', () => {
  it('holds SHA-256 digests, their 8-digit prefix and the metadata; reads Bearer then x-api-key by default', () => {
    const { ir, problems } = fromFile([{ key: KEY, consumer: 'team-a', group: 'a', labels: { tier: 'gold' } }, { key: 'sk-other-key-000', consumer: 'team-b' }]);
    expect(problems).toEqual([]);
    const digest = createHash('sha256').update(KEY).digest('hex');
    expect(ir!.keyFrom).toEqual([{ type: 'Bearer' }, { type: 'Header', name: 'x-api-key' }]);
    expect(ir!.consumers[0]!.digest.reveal()).toBe(digest);
    expect(ir!.consumers[0]).toMatchObject({ id: digest.slice(0, 8), consumer: 'team-a', group: 'a', labels: { tier: 'gold' } });
    expect(ir!.consumers[1]).toMatchObject({ consumer: 'team-b', group: null, labels: {} });
    expect(JSON.stringify(ir)).not.toContain(digest);
  });

  it('reads JSON too, and an empty list means nobody', () => {
    expect(fromFile(JSON.stringify([{ key: KEY, consumer: 'a' }])).ir!.consumers).toHaveLength(1);
    expect(fromFile('[]').ir!.consumers).toEqual([]);
  });

  it('names every bad entry by its index, never quoting a key', () => {
    const { ir, problems } = fromFile([
      { key: KEY, consumer: 'ok' },
      { consumer: 'no-key' },
      { key: '', consumer: 'empty' },
      { key: 'short', consumer: 'short' },
      { key: 'has a space in it', consumer: 'space' },
      { key: 'k'.repeat(513), consumer: 'long' },
      { key: 12345678, consumer: 'number' },
      { key: 'sk-fine-but-no-consumer' },
      { key: 'sk-fine-bad-labels', consumer: 'c', labels: { n: 1 } },
      { key: 'sk-fine-bad-label-list', consumer: 'c', labels: ['a'] },
      { key: 'sk-fine-unknown', consumer: 'c', team: 'x' },
      { key: KEY, consumer: 'duplicate' },
      'just a string',
      { key: 'sk-control-in-name', consumer: 'a\u0007b' },
      { key: 'sk-too-many-labels', consumer: 'c', labels: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`l${i}`, 'v'])) },
    ]);
    expect(ir).toBeNull();
    const at = `${AT}.file: file keys.yaml entry`;
    expect(problems).toEqual([
      `${at} 1: key is missing`,
      `${at} 2: key is empty`,
      `${at} 3: key is 5 characters; a key has 8 to 512`,
      `${at} 4: key has a character that is not visible ASCII (a space, a control character or non-ASCII); keys travel in headers, cookies and query parameters as written`,
      `${at} 5: key is 513 characters; a key has 8 to 512`,
      `${at} 6: key is a number; write it as a string (quote it in YAML)`,
      `${at} 7: consumer is missing`,
      `${at} 8: label "n" is 1; label values are strings (quote numbers and booleans in YAML)`,
      `${at} 9: labels is ["a"]; expected an object of strings, e.g. {tier: gold}`,
      `${at} 10 has unknown field "team"; an entry has key, consumer, group and labels`,
      `${at} 11: key is the same as the key of file keys.yaml entry 0; every key must be different (a consumer may have several keys)`,
      `${at} 12 is "just a string"; expected {key, consumer, group, labels}`,
      `${at} 13: consumer "a\\u0007b" has a control character`,
      `${at} 14: labels has 33 entries, more than 32`,
    ]);
    for (const p of problems) expect(p).not.toContain(KEY);
  });

  it('refuses a file that is not a list, does not parse, or is empty', () => {
    expect(fromFile({ key: KEY }).problems).toEqual([`${AT}.file: file keys.yaml holds object; expected a list of {key, consumer, group, labels}`]);
    expect(fromFile('- key: [').problems[0]).toMatch(/^spec\.traffic\.apiKey\.file: file keys\.yaml /);
    expect(fromFile('').problems).toEqual([`${AT}.file: file keys.yaml is empty: expected a list of {key, consumer, group, labels}; write [] for no keys`]);
    expect(convert({ file: 'missing.yaml' }, sources({})).problems).toEqual([`${AT}: no files can be read here`]);
  });

  it('holds at most 100,000 keys', () => {
    const many = `[${Array.from({ length: 100_001 }, () => '{}').join(',')}]`;
    expect(fromFile(many).problems).toEqual([`${AT}.file: file keys.yaml has 100001 entries, more than the 100000 an apiKey policy may hold; split the consumers across routes or policies`]);
  });

  it('refuses a place listed twice, and Authorization or Cookie as plain headers', () => {
    const { problems } = fromFile([{ key: KEY, consumer: 'a' }], {
      keyFrom: [{ type: 'Header', name: 'X-Key' }, { type: 'Header', name: 'x-key' }, { type: 'Header', name: 'Authorization' }, { type: 'Header', name: 'cookie' }],
    });
    expect(problems).toEqual([
      `${AT}.keyFrom[1]: names the same place as keyFrom[0] (Header x-key); list each place once`,
      `${AT}.keyFrom[2].name: is the Authorization header: use {type: Bearer}, which reads its Bearer credential`,
      `${AT}.keyFrom[3].name: is the Cookie header: use {type: Cookie, name: <cookie>}, which reads one cookie`,
    ]);
  });
});

describe('apiKey from Secrets', () => {
  const secret = (name: string, data: Record<string, string>): SourceObject => ({ origin: `Secret team/${name}`, name, data });

  it('makes one consumer per Secret: its name by default, group and JSON labels', () => {
    const { ir, problems } = convert(
      { secretSelector: { matchLabels: { 'tollgate.dev/api-key': 'true' } } },
      sources({}, [secret('alice', { key: KEY }), secret('bob', { key: 'sk-bob-key-1234', consumer: 'Bob', group: 'b', labels: '{"tier":"silver"}' })]),
    );
    expect(problems).toEqual([]);
    expect(ir!.consumers.map((c) => [c.consumer, c.group, c.labels])).toEqual([
      ['alice', null, {}],
      ['Bob', 'b', { tier: 'silver' }],
    ]);
  });

  it('names a bad Secret, never its key', () => {
    const { ir, problems } = convert(
      { secretRefs: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] },
      sources({}, [secret('a', { consumer: 'x' }), secret('b', { key: KEY, labels: 'tier=gold' }), secret('c', { key: KEY, labels: '{"tier":7}' })]),
    );
    expect(ir).toBeNull();
    expect(problems).toEqual([
      `${AT}.secretRefs: Secret team/a: key is missing`,
      `${AT}.secretRefs: Secret team/b: data key "labels" is not JSON; write a JSON object of strings, e.g. {"tier":"gold"}`,
      `${AT}.secretRefs: Secret team/c: label "tier" is 7; label values are strings (quote numbers and booleans in YAML)`,
    ]);
  });

  it('passes on what the sources refuse (a missing Secret, a Secret not granted)', () => {
    const src: PolicySources = { ...NO_SOURCES, secrets: (at) => ({ ok: false, reason: 'RefNotPermitted', problem: { path: at, message: 'Secret other/k: no ReferenceGrant allows it' } }) };
    expect(convert({ secretRefs: [{ name: 'k', namespace: 'other' }] }, src).problems).toEqual([`${AT}.secretRefs: Secret other/k: no ReferenceGrant allows it`]);
  });
});

describe('apiKey in a snapshot', () => {
  it('travels the wire with its digests, which dumps print as [redacted]', () => {
    const cfg = validateStandaloneConfig({
      binds: [{ port: 8080, listeners: [{ name: 'l', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: '127.0.0.1:9000' }], policies: { traffic: { apiKey: { file: 'keys.yaml', keyFrom: [{ type: 'Cookie', name: 'k' }] } } } }] }] }],
    });
    const snapshot = standaloneToSnapshot(cfg, { kind: 'file', path: '/c.yaml' }, undefined, sources({ 'keys.yaml': stringify([{ key: KEY, consumer: 'a', labels: { 'example.com/team': 'x' } }]) }));
    const back = decodeSnapshot(encodeSnapshot(snapshot));
    const key = back.binds[0]!.listeners[0]!.routes[0]!.policy!.apiKey!;
    expect(key.consumers[0]!.digest.reveal()).toBe(createHash('sha256').update(KEY).digest('hex'));
    expect(JSON.stringify(back)).toContain('"digest":"[redacted]"');
    expect(encodeSnapshot(snapshot)).not.toContain(KEY);
  });
});
