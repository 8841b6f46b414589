// The `provider` block of a backend: a standalone config's backend (its key in a file) and the
// Backend resource's spec (its key in a Secret) share every field but where the key is read.
import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { Enum } from '../schema/common.js';
import { FilePath } from '../auth/refs.js';
import { AZURE_DEFAULT_API_VERSION, PROVIDER_TYPES } from './presets.js';

const NAME = { minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$', expected: 'a Kubernetes object name (lower-case letters, digits, "-" and ".")' };

/** Fields of every provider block; the cross-field rules are in checkProvider (files) and PROVIDER_RULES (the CRD). */
const common = {
  type: Enum(
    PROVIDER_TYPES,
    'The provider: OpenAI, Anthropic, AzureOpenAI, or OpenAICompatible (any server speaking the OpenAI API: vLLM, Ollama, TGI, Gemini\'s OpenAI endpoint). It decides the default base path, the header the key is sent in and how usage is read. Anthropic: requests of OpenAI Chat Completions clients (/v1/chat/completions) are translated to its Messages API; the other types are passed through.',
  ),
  basePath: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: '^/[A-Za-z0-9\\-._~!$&\'()*+,;=:@%/]*$',
      expected: 'a path starting with "/" (no query, no fragment)',
      description:
        'Path the provider\'s API lives under; the client\'s API root `/v1` is replaced by it (`/v1/chat/completions` goes to `<basePath>/chat/completions`), any other path is prefixed with it. Default: `/v1` (OpenAI, Anthropic, OpenAICompatible), `/openai/deployments/<deployment>` (AzureOpenAI).',
    }),
  ),
  deployment: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.\\-]*$',
      expected: 'an Azure deployment name (letters, digits, "_", "." and "-")',
      description: 'AzureOpenAI only: the deployment requests go to (its base path is `/openai/deployments/<deployment>`). Required with AzureOpenAI unless basePath is set.',
    }),
  ),
  apiVersion: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.\\-]*$',
      expected: 'an API version such as 2024-10-21',
      description: `AzureOpenAI only: the \`api-version\` query parameter sent with every request (the client's is replaced). Default ${AZURE_DEFAULT_API_VERSION} with a deployment; none with a basePath of your own.`,
    }),
  ),
} satisfies TProperties;

/** The CEL form of checkProvider's rules, for the CRD (the API server runs them). */
export const PROVIDER_RULES = [
  { rule: "!has(self.deployment) || self.type == 'AzureOpenAI'", message: 'deployment is for type AzureOpenAI only' },
  { rule: "!has(self.apiVersion) || self.type == 'AzureOpenAI'", message: 'apiVersion is for type AzureOpenAI only' },
  { rule: "self.type != 'AzureOpenAI' || has(self.deployment) || has(self.basePath)", message: 'type AzureOpenAI needs deployment (or a basePath of your own)' },
];

export const ProviderFileConfig = Type.Object(
  {
    ...common,
    apiKey: Type.Optional(
      Type.Object(
        { file: FilePath('the provider key (the whole file, surrounding whitespace ignored)') },
        { additionalProperties: false, description: 'The provider key, set upstream in the provider\'s header after the client\'s own credential headers are removed. Absent: the request goes without one (a server that takes no key).' },
      ),
    ),
  },
  { additionalProperties: false, description: 'The LLM provider behind this backend: its API path and the key the gateway sends it.' },
);
export type ProviderFileConfig = Static<typeof ProviderFileConfig>;

export const ApiKeySecretRef = Type.Object(
  {
    name: Type.String({ ...NAME, description: 'Name of the Secret.' }),
    namespace: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', expected: 'a namespace name', description: 'Namespace of the Secret; default the Backend\'s. Another namespace needs a ReferenceGrant there that allows Backends of this namespace to refer to Secrets.' }),
    ),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$', expected: 'a data key of letters, digits, "-", "_" and "."', description: 'Key of the Secret\'s data holding the provider key; default apiKey.' })),
  },
  { additionalProperties: false, description: 'The Secret holding the provider key; a change to it is used for the next request, without a restart.' },
);
export type ApiKeySecretRef = Static<typeof ApiKeySecretRef>;

/** The data key of the Secret when apiKeySecretRef names none. */
export const DEFAULT_API_KEY_DATA_KEY = 'apiKey';

export const ProviderResourceConfig = Type.Object(
  { ...common, apiKeySecretRef: Type.Optional(ApiKeySecretRef) },
  { additionalProperties: false, description: 'The LLM provider behind this Backend: its API path and the key the gateway sends it.', 'x-kubernetes-validations': PROVIDER_RULES },
);
export type ProviderResourceConfig = Static<typeof ProviderResourceConfig>;
