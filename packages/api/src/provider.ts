// The providers a backend may name, shared by the standalone config, the snapshot's IR and
// its wire schema. The proxy reads `type` to pick the API format it speaks to the backend
// (packages/proxy/src/llm/formats/).
export const PROVIDER_TYPES = ['OpenAI', 'Anthropic', 'AzureOpenAI', 'OpenAICompatible'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];
