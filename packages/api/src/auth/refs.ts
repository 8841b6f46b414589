// Reference fields the authentication kinds share: a key of a Secret or ConfigMap, a Secret, a
// label selector of Secrets, a file of the standalone config, where a credential is read from.
import { Type } from '@sinclair/typebox';
import { Enum, HeaderName } from '../schema/common.js';

const NAME = { minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$', expected: 'a Kubernetes object name (lower-case letters, digits, "-" and ".")' };
const NAMESPACE = { minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', expected: 'a namespace name' };
const DATA_KEY = { minLength: 1, maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$', expected: 'a data key of letters, digits, "-", "_" and "."' };

export const SecretRef = Type.Object(
  {
    name: Type.String({ ...NAME, description: 'Name of the Secret.' }),
    namespace: Type.Optional(Type.String({ ...NAMESPACE, description: 'Namespace of the Secret; default the policy\'s. Another namespace needs a ReferenceGrant there that allows GatewayPolicies of the policy\'s namespace to refer to Secrets.' })),
  },
  { additionalProperties: false, description: 'A Secret (cluster only).' },
);

export const ObjectKeyRefSchema = (what: string, defaultKey: string) =>
  Type.Object(
    {
      kind: Type.Optional(Enum(['Secret', 'ConfigMap'], 'Kind of the object: Secret (the default) or ConfigMap.')),
      name: Type.String({ ...NAME, description: 'Name of the object.' }),
      namespace: Type.Optional(Type.String({ ...NAMESPACE, description: 'Namespace of the object; default the policy\'s. Another namespace needs a ReferenceGrant there.' })),
      key: Type.Optional(Type.String({ ...DATA_KEY, description: `Key of the object's data holding ${what}; default ${defaultKey}.` })),
    },
    { additionalProperties: false, description: `A key of a Secret or ConfigMap holding ${what} (cluster only).` },
  );

/** Secrets one secretSelector may choose (the controller refuses a policy whose selector chooses more). */
export const MAX_SELECTED_SECRETS = 1024;
/** Labels of a Secret a selector may match, keys and values together; a Secret with more is chosen by no selector. */
export const MAX_SELECTABLE_LABEL_BYTES = 4096;

export const SecretSelector = Type.Object(
  {
    matchLabels: Type.Unsafe<Record<string, string>>({
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 63, description: 'A label value.' },
      minProperties: 1,
      maxProperties: 16,
      description: 'Labels every selected Secret has.',
    }),
  },
  { additionalProperties: false, description: `Secrets of the policy's namespace chosen by their labels (cluster only); at most ${MAX_SELECTED_SECRETS} (more refuses the policy: InvalidSecretRef). A Secret whose labels together take more than ${MAX_SELECTABLE_LABEL_BYTES / 1024} KiB is chosen by no selector.` },
);

export const FilePath = (what: string) =>
  Type.String({ minLength: 1, maxLength: 4096, pattern: '^[^\\x00]*$', description: `File holding ${what}, relative to the config file (standalone only); edits take effect without a restart.` });

/** Where a credential is read from a request. */
export const CredentialLocation = (defaultText: string) =>
  Type.Object(
    {
      type: Enum(['Bearer', 'Header', 'Query', 'Cookie'], `Bearer: the Authorization header's Bearer credential. Header: the header \`name\`. Query: the query parameter \`name\` (it shows in access logs of anything before the gateway; prefer a header). Cookie: the cookie \`name\`. ${defaultText}`),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: "^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$", description: 'Header, query parameter or cookie name; not with Bearer.', expected: 'a header, parameter or cookie name' })),
    },
    {
      additionalProperties: false,
      description: 'Where the credential is read from.',
      'x-kubernetes-validations': [{ rule: "self.type == 'Bearer' ? !has(self.name) : has(self.name)", message: 'name is required with Header, Query and Cookie, and not allowed with Bearer' }],
    },
  );
export type CredentialLocationConfig = { type: 'Bearer' | 'Header' | 'Query' | 'Cookie'; name?: string };

/** A location as the proxy reads it: names lower-cased where HTTP says they are case-insensitive. */
export type CredentialLocationIR =
  | { readonly type: 'Bearer' }
  | { readonly type: 'Header'; readonly name: string }
  | { readonly type: 'Query'; readonly name: string }
  | { readonly type: 'Cookie'; readonly name: string };

export function toLocation(l: CredentialLocationConfig): CredentialLocationIR {
  if (l.type === 'Bearer') return { type: 'Bearer' };
  if (l.type === 'Header') return { type: 'Header', name: (l.name ?? '').toLowerCase() };
  return { type: l.type, name: l.name ?? '' };
}

export { HeaderName };

/** A control character (C0, DEL, C1): names and values that are printed in logs and traces have none. */
export const CONTROL_CHARACTER = /\p{Cc}/u;
