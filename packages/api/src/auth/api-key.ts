// apiKey: callers identified by a key, each key belonging to a consumer (a name, a group, free
// labels). Keys live in Secrets (cluster: one Secret per consumer) or a file (standalone); the
// proxy receives only their SHA-256 digests and compares digests.
import { Type, type Static } from '@sinclair/typebox';
import { Obj, Nullable, NonEmpty, Lit, WireSecret } from '../schema/wire-parts.js';
import type { Secret } from '../secret.js';
import { MAX_CONSUMER_LABEL_LENGTH, MAX_CONSUMER_LABELS, MAX_CONSUMER_NAME_LENGTH } from '../cel/surfaces.js';
import { CredentialLocation, FilePath, SecretRef, SecretSelector, type CredentialLocationIR } from './refs.js';

/** What one apiKey policy may hold (docs/authentication.md, "apiKey"). */
export const API_KEY_BOUNDS = {
  /** Shorter keys can be guessed; 8 still admits the keys of older systems. */
  minKeyLength: 8,
  maxKeyLength: 512,
  maxKeys: 100_000,
  /** A Kubernetes label name: a 253-character prefix, "/", a 63-character name. */
  maxLabelNameLength: 317,
} as const;

export const ApiKeyConfig = Type.Object(
  {
    secretRefs: Type.Optional(Type.Array(SecretRef, { minItems: 1, maxItems: 256, description: 'Secrets, one per consumer (cluster only). Data keys: key (the API key, required), consumer (default the Secret name), group, labels (a JSON object of strings).' })),
    secretSelector: Type.Optional(SecretSelector),
    file: Type.Optional(FilePath('the keys: a YAML or JSON list of {key, consumer, group, labels}')),
    keyFrom: Type.Optional(
      Type.Array(CredentialLocation('Default: Bearer, then the x-api-key header.'), {
        minItems: 1,
        maxItems: 4,
        description: 'Where the key is read, in order; a request with keys in two of them is refused. Default: Authorization Bearer, then x-api-key.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Callers must present an API key of a known consumer. The key is removed before the request is forwarded.',
    'x-kubernetes-validations': [{ rule: 'has(self.secretRefs) || has(self.secretSelector) || has(self.file)', message: 'name the keys: secretRefs or secretSelector (cluster), or file (standalone)' }],
  },
);
export type ApiKeyConfig = Static<typeof ApiKeyConfig>;

/** One consumer's key as the proxy holds it. */
export interface ApiKeyConsumerIR {
  /** SHA-256 of the key, hex; a Secret so that no dump prints it (see `id`). */
  readonly digest: Secret;
  /** The digest's first 8 hex digits: what config dumps, traces and logs show of the key. */
  readonly id: string;
  readonly consumer: string;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ApiKeyIR {
  readonly keyFrom: readonly CredentialLocationIR[];
  readonly consumers: readonly ApiKeyConsumerIR[];
}

const Location = Type.Union([
  Obj({ type: Lit('Bearer') }, 'Authorization: Bearer.'),
  Obj({ type: Lit('Header'), name: NonEmpty('Header name, lower case.', 256) }, 'A header.'),
  Obj({ type: Lit('Query'), name: NonEmpty('Query parameter.', 256) }, 'A query parameter.'),
  Obj({ type: Lit('Cookie'), name: NonEmpty('Cookie.', 256) }, 'A cookie.'),
]);
export const LocationWire = Location;

export const ApiKeyWire = Obj(
  {
    keyFrom: Type.Array(Location, { minItems: 1, maxItems: 4 }),
    consumers: Type.Array(
      Obj(
        {
          digest: WireSecret,
          id: Type.String({ pattern: '^[0-9a-f]{8}$' }),
          consumer: NonEmpty('Consumer name.', MAX_CONSUMER_NAME_LENGTH),
          group: Nullable(NonEmpty('Group.', MAX_CONSUMER_NAME_LENGTH)),
          labels: Type.Record(Type.String({ minLength: 1, maxLength: API_KEY_BOUNDS.maxLabelNameLength }), Type.String({ maxLength: MAX_CONSUMER_LABEL_LENGTH }), { maxProperties: MAX_CONSUMER_LABELS }),
        },
        'A consumer key.',
      ),
      { maxItems: API_KEY_BOUNDS.maxKeys },
    ),
  },
  'API keys.',
);
