export {
  startMockLlm,
  ListenError,
  DEFAULT_HOST,
  DEFAULT_COMPLETION_TOKENS,
  DEFAULT_MAX_BODY_BYTES,
  type MockLlm,
  type MockLlmOptions,
  type ReceivedRequest,
} from './server.js';
export { MOCK_HEADERS, type Knobs } from './knobs.js';
export { replyWords, estimatePromptTokens, type Usage } from './completion.js';
export { DEFAULT_MODELS } from './models.js';
export { MOCK_ERRORS, type MockErrorCode } from './errors.js';
