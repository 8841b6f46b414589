// The requests of the peer bench: the plain GET of the fixed-response cases, and the chat
// completion non-streaming and streaming (with the usage chunk, so both proxies can count
// the completion's tokens against their limit).
import { REQUESTS } from '../lib/requests.mjs';

const chatBody = (stream) =>
  JSON.stringify({
    model: 'mock-gpt',
    messages: [{ role: 'user', content: 'measure the gateway in front of the model' }],
    max_tokens: 16,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

export const PEER_REQUESTS = {
  plain: { ...REQUESTS.fixed, id: 'plain' },
  llm: { ...REQUESTS.chat, id: 'llm', body: chatBody(false) },
  'llm-stream': {
    ...REQUESTS.chat,
    id: 'llm-stream',
    body: chatBody(true),
    check: (status, body) => status === 200 && body.includes('"chat.completion.chunk"') && body.includes('"usage"') && body.trimEnd().endsWith('data: [DONE]'),
  },
};
