// Every error answer names its catalog code in x-tollgate-error, next to the OpenAI-shaped body.
import { describe, expect, it } from 'vitest';
import { chatBody, fetchRaw, postChat, start } from './helpers.js';

describe('error codes', () => {
  it('names the catalog code of each kind of error answer', async () => {
    const server = await start({ models: ['mock-gpt'] });
    const cases: [Promise<{ status: number; headers: Record<string, unknown> }>, number, string][] = [
      [fetchRaw(`${server.url}/v2/nothing`), 404, 'TG_MOCK_NOT_FOUND'],
      [fetchRaw(`${server.url}/v1/models/other`), 404, 'TG_MOCK_MODEL_NOT_FOUND'],
      [postChat(server, '{"model":'), 400, 'TG_MOCK_INVALID_REQUEST'],
      [postChat(server, chatBody(), { 'x-mock-completion-tokens': 'many' }), 400, 'TG_MOCK_INVALID_HEADER'],
      [postChat(server, chatBody(), { 'x-mock-status': '503' }), 503, 'TG_MOCK_INJECTED_STATUS'],
    ];
    for (const [answer, status, code] of cases) {
      const r = await answer;
      expect([r.status, r.headers['x-tollgate-error']]).toEqual([status, code]);
    }
  });
});
