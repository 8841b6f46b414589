// How `gwctl config all` summarizes cors, csrf and directResponse in its POLICY column, from
// the policies as /config_dump shows them.
import { describe, expect, it } from 'vitest';
import { policyText } from '../src/commands/config.js';

describe('policyText', () => {
  it('summarizes cors, csrf and directResponse beside the other kinds', () => {
    const policy = {
      localRateLimit: null,
      cors: { allowOrigins: ['https://chat.example.com', 'https://*.example.org'], allowMethods: [], allowHeaders: [], exposeHeaders: [], allowCredentials: true, maxAge: 600 },
      csrf: { additionalOrigins: ['https://chat.example.com'] },
      directResponse: { status: 503, headers: [], body: { contentType: 'application/json', text: '{}' } },
    };
    expect(policyText(policy)).toBe('cors: origins https://chat.example.com, https://*.example.org, credentials; csrf: own origin, https://chat.example.com; directResponse: status 503');
    expect(policyText({ cors: { allowOrigins: ['*'], allowCredentials: false }, csrf: { additionalOrigins: [] } })).toBe('cors: origins *; csrf: own origin');
  });
});
