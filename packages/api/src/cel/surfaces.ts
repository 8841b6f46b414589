// Where CEL expressions appear and what they may read there: the declared variables, each
// with the bounds the cost estimate assumes (those of CelLimits, the fixed ones below) and
// that a request must honour before an expression reads it (./inputs.ts). A new place for
// expressions (authorization rules, transformations) is one more surface here.
import { MAX_DNS_NAME } from '../host-port.js';
import type { CelLimits } from '../limits.js';
import { BOOL, INT, map, str, type Kind, type Shape } from './shape.js';

/** Longest HTTP method Node.js parses ("UNSUBSCRIBE" is 11), with room. */
export const MAX_METHOD_LENGTH = 32;
/** Longest client address text: IPv6 (45) with a zone index. */
export const MAX_ADDRESS_LENGTH = 64;
/** Longest model name taken from a request body. */
export const MAX_MODEL_LENGTH = 256;
/** Longest request.host (the Host header without its port). */
export const MAX_HOST_LENGTH = MAX_DNS_NAME;

/** Consumer fields (apiKey metadata, a basic-auth user, JWT claims), bounded where they are made. */
export const MAX_CONSUMER_NAME_LENGTH = 253;
export const MAX_CONSUMER_LABELS = 32;
export const MAX_CONSUMER_LABEL_LENGTH = 1024;
/** Top-level claims of a JWT an expression sees (each value a string; JSON for other values). */
export const MAX_CONSUMER_CLAIMS = 64;
export const MAX_CLAIM_LENGTH = 4096;

/**
 * transformHeader: a header value a transformation sets or adds; transformBody: a value it
 * writes into a JSON request body; transformWhen: the condition of one of its edits.
 */
export type CelSurface = 'descriptor' | 'traceFilter' | 'authorization' | 'transformHeader' | 'transformBody' | 'transformWhen';

interface SurfaceDef {
  readonly what: string;
  /** Kinds the expression may evaluate to. */
  readonly results: ReadonlySet<Kind>;
  readonly variables: (limits: CelLimits) => Record<string, Shape>;
}

const request = (limits: CelLimits): Shape => ({
  t: 'record',
  name: 'request',
  fields: {
    method: str(MAX_METHOD_LENGTH),
    path: str(limits.maxPathLength),
    host: str(MAX_HOST_LENGTH),
    headers: map(str(limits.maxHeaderLength), str(limits.maxHeaderLength), limits.maxHeaders),
  },
});

/**
 * Who is calling, once an authentication check established it: `name` and `group` are ""
 * (labels and claims empty) when no check did, or before authentication runs. Rate limits that
 * read it run after authentication (docs/rate-limiting.md, "Keyed budgets").
 */
const CONSUMER: Shape = {
  t: 'record',
  name: 'consumer',
  fields: {
    name: str(MAX_CONSUMER_NAME_LENGTH),
    group: str(MAX_CONSUMER_NAME_LENGTH),
    labels: map(str(MAX_CONSUMER_LABEL_LENGTH), str(MAX_CONSUMER_LABEL_LENGTH), MAX_CONSUMER_LABELS),
    claims: map(str(MAX_CLAIM_LENGTH), str(MAX_CLAIM_LENGTH), MAX_CONSUMER_CLAIMS),
  },
};

/**
 * What a transformation's expressions read: the request as the checks saw it, the consumer they
 * established, and of an LLM body the fields the token reservation reads (docs/transformation.md).
 */
const transformation = (limits: CelLimits): Record<string, Shape> => ({
  request: request(limits),
  source: { t: 'record', name: 'source', fields: { address: str(MAX_ADDRESS_LENGTH) } },
  llm: { t: 'record', name: 'llm', fields: { model: str(MAX_MODEL_LENGTH), maxTokens: INT, stream: BOOL } },
  consumer: CONSUMER,
});

export const SURFACES: Readonly<Record<CelSurface, SurfaceDef>> = {
  descriptor: {
    what: 'a rate limit descriptor value or key',
    results: new Set(['string', 'int', 'uint', 'double', 'bool']),
    variables: (limits) => ({
      request: request(limits),
      source: { t: 'record', name: 'source', fields: { address: str(MAX_ADDRESS_LENGTH) } },
      llm: { t: 'record', name: 'llm', fields: { model: str(MAX_MODEL_LENGTH) } },
      consumer: CONSUMER,
    }),
  },
  authorization: {
    what: 'an authorization rule',
    results: new Set(['bool']),
    variables: (limits) => ({
      request: request(limits),
      source: { t: 'record', name: 'source', fields: { address: str(MAX_ADDRESS_LENGTH) } },
      llm: { t: 'record', name: 'llm', fields: { model: str(MAX_MODEL_LENGTH) } },
      consumer: CONSUMER,
    }),
  },
  transformHeader: { what: 'a header value', results: new Set(['string', 'int', 'uint', 'double', 'bool']), variables: transformation },
  transformBody: { what: 'a body value', results: new Set(['string', 'int', 'uint', 'double', 'bool', 'null', 'list', 'map']), variables: transformation },
  transformWhen: { what: 'the condition of an edit', results: new Set(['bool']), variables: transformation },
  traceFilter: {
    what: 'a trace match',
    results: new Set(['bool']),
    variables: (limits) => ({ request: request(limits) }),
  },
};
