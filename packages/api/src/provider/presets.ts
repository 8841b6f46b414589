// What each provider preset knows: the path its API lives under, how a request carries its
// key, and where its responses report usage. One table, read by the config conversion (the
// default base path), the proxy (the headers it sets) and the docs.
export const PROVIDER_TYPES = ['OpenAI', 'Anthropic', 'AzureOpenAI', 'OpenAICompatible'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/** How a request carries the provider key. */
export type ProviderAuth = 'Bearer' | 'ApiKeyHeader' | 'XApiKey';

export interface ProviderPreset {
  /** Base path when the backend sets none (Azure's depends on the deployment: azureBasePath). */
  readonly basePath: string;
  readonly auth: ProviderAuth;
  /** Where the response body reports token usage (docs; the meters read these formats). */
  readonly usage: 'OpenAI' | 'Anthropic';
}

export const PROVIDER_PRESETS: Readonly<Record<ProviderType, ProviderPreset>> = {
  OpenAI: { basePath: '/v1', auth: 'Bearer', usage: 'OpenAI' },
  Anthropic: { basePath: '/v1', auth: 'XApiKey', usage: 'Anthropic' },
  AzureOpenAI: { basePath: '/openai', auth: 'ApiKeyHeader', usage: 'OpenAI' },
  OpenAICompatible: { basePath: '/v1', auth: 'Bearer', usage: 'OpenAI' },
};

/** The `api-version` Azure OpenAI gets when the backend names none (the GA version of its deployments API). */
export const AZURE_DEFAULT_API_VERSION = '2024-10-21';

/** Azure OpenAI's path for a deployment: requests of the OpenAI API go under it. */
export function azureBasePath(deployment: string): string {
  return `/openai/deployments/${deployment}`;
}

/** Longest provider key accepted: real keys are under 300 characters. */
export const MAX_PROVIDER_KEY_LENGTH = 4096;

/** The API root a client addresses: OpenAI's SDKs and Anthropic's use `<base URL>/v1/...`. */
export const CLIENT_API_ROOT = '/v1';
