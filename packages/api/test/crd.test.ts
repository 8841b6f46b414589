import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  checkTrafficPolicy,
  DEFAULT_LIMITS,
  compile,
  CRD_REGENERATE_COMMAND,
  GatewayPolicySpec,
  LOCAL_MONTHS_MESSAGE,
  MAX_KEY_VALUE_LENGTH,
  MAX_RATE_LIMIT_OVERRIDES,
  OVERRIDES_NEED_BY,
  OVERRIDES_SAME_KIND,
  gatewayPolicyCrd,
  renderCrdYaml,
  staleCrds,
  StructuralSchemaError,
  toStructural,
  type JsonSchema,
  type Problem,
} from '../src/index.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

type Node = JsonSchema & { properties?: Record<string, Node>; items?: Node };

function openApiSchema(): Node {
  const crd = gatewayPolicyCrd() as { spec: { versions: { schema: { openAPIV3Schema: Node } }[] } };
  return crd.spec.versions[0]!.schema.openAPIV3Schema;
}

/** Every schema node below the root, with its path. */
function* walk(node: Node, path: string): Generator<[string, Node]> {
  yield [path, node];
  for (const [name, sub] of Object.entries(node.properties ?? {})) yield* walk(sub, `${path}.${name}`);
  if (node.items) yield* walk(node.items, `${path}[]`);
}

function at(path: string): Node {
  let node = openApiSchema();
  for (const part of path.split('.')) {
    const name = part.replace(/\[\]$/, '');
    node = node.properties![name]!;
    if (part.endsWith('[]')) node = node.items!;
  }
  return node;
}

describe('GatewayPolicy CRD', () => {
  it('committed YAML matches the schema', () => {
    const stale = staleCrds(repoRoot);
    const help = stale.map((s) => `${s.file} is ${s.reason === 'missing' ? 'missing' : 'stale'}`).join('; ');
    expect(stale, `${help}. The GatewayPolicy schema changed: run \`${CRD_REGENERATE_COMMAND}\` and commit the result.`).toEqual([]);
  });

  it('renders YAML that parses back to the generated object', () => {
    expect(parse(renderCrdYaml())).toEqual(gatewayPolicyCrd());
  });

  it('names, scope, status subresource, printer columns and the policy label', () => {
    const crd = gatewayPolicyCrd() as {
      metadata: { name: string; labels: Record<string, string> };
      spec: { names: { shortNames: string[]; kind: string }; scope: string; versions: Record<string, unknown>[] };
    };
    expect(crd.metadata.name).toBe('gatewaypolicies.tollgate.dev');
    expect(crd.metadata.labels['gateway.networking.k8s.io/policy']).toBe('Direct');
    expect(crd.spec.names.shortNames).toEqual(['gwpol']);
    expect(crd.spec.scope).toBe('Namespaced');
    const v = crd.spec.versions[0]!;
    expect(v.name).toBe('v1alpha1');
    expect(v.subresources).toEqual({ status: {} });
    expect((v.additionalPrinterColumns as { name: string }[]).map((c) => c.name)).toEqual(['Accepted', 'Attached', 'Age']);
  });

  it('every field has a type and a description (for kubectl explain)', () => {
    const root = openApiSchema();
    for (const [path, node] of walk(root, '')) {
      if (path === '.metadata') continue; // the API server supplies ObjectMeta's schema
      expect(typeof node.type, `${path} type`).toBe('string');
      expect(typeof node.description, `${path} description`).toBe('string');
    }
  });

  it('carries no keyword a structural schema forbids', () => {
    const text = JSON.stringify(openApiSchema());
    // additionalProperties appears only as the schema of a map's values (matchLabels), never as a flag.
    for (const bad of ['"expected"', '"additionalProperties":false', '"additionalProperties":true', '"anyOf"', '"oneOf"', '"allOf"', '"const"', '"$id"']) {
      expect(text, bad).not.toContain(bad);
    }
  });

  it('every list is bounded', () => {
    const lists = [...walk(openApiSchema(), '')].filter(([, node]) => node.type === 'array');
    // The schema has lists (targetRefs, local limits, descriptors...): the check ran on them.
    expect(lists.length).toBeGreaterThan(3);
    const unbounded = lists.filter(([, node]) => typeof node.maxItems !== 'number').map(([path]) => path);
    expect(unbounded).toEqual([]);
  });

  it('keeps the CEL rules of a local limit and the closed sets', () => {
    const local = at('spec.traffic.rateLimit.local[]');
    expect(local['x-kubernetes-validations']).toEqual([
      { rule: 'has(self.requests) != has(self.tokens)', message: 'exactly one of requests or tokens must be set' },
      { rule: '!has(self.burst) || has(self.requests)', message: 'burst is only allowed with requests' },
      { rule: "self.unit != 'Months'", message: LOCAL_MONTHS_MESSAGE },
      { rule: '!has(self.overrides) || has(self.by)', message: OVERRIDES_NEED_BY },
      { rule: '!has(self.overrides) || self.overrides.all(o, has(o.requests) == has(self.requests))', message: OVERRIDES_SAME_KIND },
    ]);
    // A key given twice is refused by the API server itself, naming the index.
    for (const path of ['spec.traffic.rateLimit.local[].overrides', 'spec.traffic.rateLimit.global.descriptors[].overrides']) {
      expect(at(path)['x-kubernetes-list-type']).toBe('map');
      expect(at(path)['x-kubernetes-list-map-keys']).toEqual(['key']);
      expect(at(path).maxItems).toBe(MAX_RATE_LIMIT_OVERRIDES);
      expect(at(`${path}[].key`).maxLength).toBe(MAX_KEY_VALUE_LENGTH);
    }
    expect(at('spec.traffic.rateLimit.local[].unit').enum).toEqual(['Seconds', 'Minutes', 'Hours', 'Days', 'Months']);
    expect(at('spec.traffic.rateLimit.local[].by.type').enum).toEqual(['Consumer', 'ConsumerGroup', 'Claim', 'Header', 'ClientCertificate', 'Expression']);
    expect(at('spec.targetRefs[].group').enum).toEqual(['gateway.networking.k8s.io']);
    expect(at('spec.targetRefs[].kind').enum).toEqual(['Gateway', 'HTTPRoute', 'GRPCRoute']);
    expect(at('spec.targetRefs[].kind').maxLength).toBe('HTTPRoute'.length);
  });

  it('status: ancestors with conditions keyed by type', () => {
    const conditions = at('status.ancestors[].conditions');
    expect(conditions['x-kubernetes-list-type']).toBe('map');
    expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(Object.keys(conditions.items!.properties!)).toEqual(['type', 'status', 'reason', 'message', 'lastTransitionTime', 'observedGeneration']);
    expect(Object.keys(at('status.ancestors[]').properties!)).toEqual(['ancestorRef', 'controllerName', 'conditions']);
  });
});

describe('toStructural', () => {
  it('strips annotations and TypeBox symbols, keeps validations, turns const into enum', () => {
    const schema = Type.Object(
      {
        a: Type.String({ description: 'A.', pattern: '^x$', expected: 'an x' }),
        b: Type.Literal('only', { description: 'B.' }),
      },
      { additionalProperties: false, description: 'Root.', 'x-kubernetes-validations': [{ rule: 'true' }] },
    );
    const out = toStructural(schema);
    expect(out).toEqual({
      description: 'Root.',
      type: 'object',
      properties: {
        a: { description: 'A.', type: 'string', pattern: '^x$' },
        b: { description: 'B.', type: 'string', enum: ['only'], maxLength: 4 },
      },
      required: ['a', 'b'],
      'x-kubernetes-validations': [{ rule: 'true' }],
    });
    expect(Object.getOwnPropertySymbols(out)).toEqual([]);
  });

  it('names the path of a field without a description', () => {
    const schema = Type.Object({ inner: Type.Object({ x: Type.Integer() }, { description: 'Inner.' }) }, { description: 'Root.' });
    expect(() => toStructural(schema as unknown as JsonSchema, 'spec')).toThrow(new StructuralSchemaError('spec.inner.x', 'needs a description (it is what `kubectl explain` prints)'));
  });

  it('refuses unions, which are not structural', () => {
    const schema = Type.Object({ u: Type.Union([Type.String(), Type.Integer()], { description: 'U.' }) }, { description: 'Root.' });
    expect(() => toStructural(schema as unknown as JsonSchema)).toThrow(/u: keyword "anyOf" has no structural equivalent/);
  });

  it('refuses unbounded lists', () => {
    const schema = Type.Array(Type.String({ description: 'S.' }), { description: 'L.' });
    expect(() => toStructural(schema as unknown as JsonSchema, 'l')).toThrow(/l: arrays need maxItems/);
  });
});

describe('examples/gatewaypolicy*.yaml', () => {
  const files = readdirSync(join(repoRoot, 'examples')).filter((f) => /^gatewaypolicy.*\.yaml$/.test(f));
  const validateSpec = compile(GatewayPolicySpec);

  it('exist for the spec case and the other features', () => {
    expect(files).toContain('gatewaypolicy.yaml');
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  it.each(files)('%s is a valid GatewayPolicy', (file) => {
    const doc = parse(readFileSync(join(repoRoot, 'examples', file), 'utf8')) as {
      apiVersion: string;
      kind: string;
      metadata: { name?: string; namespace?: string };
      spec: unknown;
    };
    expect(doc.apiVersion).toBe('tollgate.dev/v1alpha1');
    expect(doc.kind).toBe('GatewayPolicy');
    expect(doc.metadata.name).toBeTruthy();
    expect(doc.metadata.namespace).toBeTruthy();
    const r = validateSpec(doc.spec);
    expect(r.ok ? [] : r.problems).toEqual([]);
    if (!r.ok) return;
    const problems: Problem[] = [];
    checkTrafficPolicy(r.value.traffic, 'spec.traffic', 'cluster', DEFAULT_LIMITS, problems);
    expect(problems).toEqual([]);
  });
});
