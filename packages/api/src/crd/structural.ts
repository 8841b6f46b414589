// Turns a TypeBox / JSON schema into a Kubernetes structural OpenAPI v3 schema
// (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema).
//
// - keeps the keywords apiextensions.k8s.io/v1 understands and every `x-kubernetes-*` marker;
// - drops what only our own validators use (`expected`, `additionalProperties: false`,
//   TypeBox's symbol keys, `$id`, `title`, `examples`): unknown fields are pruned by the
//   API server and rejected by kubectl's strict field validation instead;
// - turns `const` into a one-value `enum`;
// - turns our checking keywords into what the API server runs: `hostPort` into the pattern of
//   host-port.ts, `duration` into the Duration pattern and CEL bounds;
// - bounds enum strings with `maxLength` (so CEL rules over them have a known cost);
// - fails, naming the path, on a node without `type` or `description`, or on a keyword that
//   would change validation if dropped (anyOf, oneOf, allOf, not, $ref, patternProperties, ...).

import { DURATION_PATTERN, MAX_DURATION, type DurationRules } from '../duration.js';
import { hostPattern, hostPortPattern, type PortRules } from '../host-port.js';

export type JsonSchema = Record<string, unknown>;

/** The bounds of a value, an array or an object. */
const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'minProperties', 'maxProperties'];

/** Keywords copied as they are. */
const KEPT = new Set(['type', 'description', 'format', 'enum', 'default', 'nullable', 'required', ...BOUNDS]);

/** Keywords that only annotate (or only our ajv validators read): dropped. */
const DROPPED = new Set(['expected', '$id', '$schema', 'title', 'examples', '$comment']);

/** Formats the API server knows (k8s.io/kube-openapi strfmt); others would be rejected or ignored. */
const FORMATS = new Set(['date-time', 'date', 'duration', 'byte', 'int32', 'int64', 'float', 'double', 'uri', 'email', 'hostname', 'ipv4', 'ipv6', 'cidr', 'uuid', 'password']);

export class StructuralSchemaError extends Error {
  constructor(path: string, message: string) {
    super(`${path || '<root>'}: ${message}`);
    this.name = 'StructuralSchemaError';
  }
}

function isObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Returns the structural form of `schema`; `path` names the node in errors (e.g. `spec.targetRefs[]`). */
export function toStructural(schema: JsonSchema, path = ''): JsonSchema {
  const out: JsonSchema = {};
  const rules: JsonSchema[] = [];
  // Object.entries skips TypeBox's symbol keys ([Kind], [OptionalKind]).
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'host') {
      out.pattern = hostPattern();
    } else if (key === 'hostPort') {
      out.pattern = hostPortPattern(value as PortRules);
    } else if (key === 'duration') {
      out.pattern = DURATION_PATTERN;
      rules.push(...durationRules(value as DurationRules));
    } else if (KEPT.has(key)) {
      out[key] = structuredClone(value);
    } else if (key.startsWith('x-kubernetes-')) {
      out[key] = structuredClone(value);
    } else if (key === 'const') {
      out.enum = [structuredClone(value)];
    } else if (key === 'properties') {
      if (!isObject(value)) throw new StructuralSchemaError(path, 'properties must be an object');
      const props: JsonSchema = {};
      for (const [name, sub] of Object.entries(value)) {
        if (!isObject(sub)) throw new StructuralSchemaError(`${path}.${name}`, 'schema must be an object');
        props[name] = toStructural(sub, path ? `${path}.${name}` : name);
      }
      out.properties = props;
    } else if (key === 'items') {
      if (!isObject(value)) throw new StructuralSchemaError(path, 'items must be a single schema (tuples are not structural)');
      out.items = toStructural(value, `${path}[]`);
    } else if (key === 'additionalProperties') {
      if (value === false) continue; // closed object: pruning and strict field validation reject unknown fields
      if (isObject(value) && !('properties' in schema)) {
        out.additionalProperties = toStructural(value, `${path}{}`);
        continue;
      }
      throw new StructuralSchemaError(path, 'additionalProperties must be false, or a schema on an object without properties');
    } else if (DROPPED.has(key)) {
      continue;
    } else {
      throw new StructuralSchemaError(path, `keyword "${key}" has no structural equivalent; express the rule with x-kubernetes-validations`);
    }
  }
  if (rules.length) out['x-kubernetes-validations'] = [...((out['x-kubernetes-validations'] as JsonSchema[] | undefined) ?? []), ...rules];
  if (typeof out.type !== 'string') throw new StructuralSchemaError(path, 'every node of a structural schema needs a type');
  if (typeof out.description !== 'string' || !out.description.trim()) {
    throw new StructuralSchemaError(path, 'needs a description (it is what `kubectl explain` prints)');
  }
  if (typeof out.format === 'string' && !FORMATS.has(out.format)) {
    throw new StructuralSchemaError(path, `format "${out.format}" is not known to the API server`);
  }
  if (schema.uniqueItems === true) throw new StructuralSchemaError(path, 'uniqueItems is not allowed; use x-kubernetes-list-type: set');
  if (out.type === 'string' && Array.isArray(out.enum) && out.maxLength === undefined) {
    out.maxLength = Math.max(...out.enum.map((v) => String(v).length));
  }
  if (out.type === 'array' && out.maxItems === undefined) {
    throw new StructuralSchemaError(path, 'arrays need maxItems (bounded lists keep CEL costs and objects small)');
  }
  return order(out);
}

/** The bounds of checkDuration as CEL (the pattern has already checked the shape). */
function durationRules(rules: DurationRules): JsonSchema[] {
  const out: JsonSchema[] = [{ rule: `duration(self) <= duration('${MAX_DURATION}')`, message: `must be at most ${MAX_DURATION} (the longest timer the proxy can set)` }];
  if (!rules.allowZero) out.push({ rule: "duration(self) > duration('0s')", message: 'must be more than 0s' });
  return out;
}

/** A stable, readable key order: description first, then type, bounds, children, markers. */
const ORDER = ['description', 'type', 'format', 'enum', 'default', 'nullable', ...BOUNDS, 'items', 'properties', 'additionalProperties', 'required'];

function order(node: JsonSchema): JsonSchema {
  const keys = Object.keys(node).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return Object.fromEntries(keys.map((k) => [k, node[k]]));
}

function rank(key: string): number {
  const i = ORDER.indexOf(key);
  return i === -1 ? ORDER.length : i;
}
