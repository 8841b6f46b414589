// The one redaction list: header names and query parameter names, and redactPathAndQuery.
import { describe, expect, it } from 'vitest';
import { isSensitiveHeader, redactHeaders, redactPathAndQuery } from '../src/index.js';

describe('redactPathAndQuery', () => {
  it('replaces the values of credential parameters, matching names case-insensitively', () => {
    expect(redactPathAndQuery('/v1/chat?api_key=sk-1&model=gpt-4o&KEY=k&Access_Token=t&sig=abc%3D&X-Amz-Signature=ff')).toBe(
      '/v1/chat?api_key=[redacted]&model=gpt-4o&KEY=[redacted]&Access_Token=[redacted]&sig=[redacted]&X-Amz-Signature=[redacted]',
    );
  });
  it('keeps everything else byte for byte: the path, other parameters, their encoding, empty parts, a fragment', () => {
    expect(redactPathAndQuery('/a%2Fb/c?q=a+b%20c&&flag&token=x#frag')).toBe('/a%2Fb/c?q=a+b%20c&&flag&token=[redacted]#frag');
    expect(redactPathAndQuery('/plain/path')).toBe('/plain/path');
    expect(redactPathAndQuery('/p?model=x')).toBe('/p?model=x');
  });
  it('matches percent-encoded names, and works on absolute URLs', () => {
    expect(redactPathAndQuery('/p?%61pi_key=s&client%5Fsecret=c')).toBe('/p?%61pi_key=[redacted]&client%5Fsecret=[redacted]');
    expect(redactPathAndQuery('http://h.example/p?password=hunter2&u=me')).toBe('http://h.example/p?password=[redacted]&u=me');
  });
  it('leaves a parameter without a value as it is', () => {
    expect(redactPathAndQuery('/p?token&x=1')).toBe('/p?token&x=1');
  });
});

describe('sensitive headers', () => {
  it('includes the session-token and subscription-key headers, case-insensitively', () => {
    for (const h of ['Authorization', 'x-amz-security-token', 'X-Goog-IAM-Authorization-Token', 'x-csrf-token', 'x-session-token', 'x-access-token', 'Ocp-Apim-Subscription-Key', 'x-auth-token', 'x-goog-api-key', 'cookie', 'set-cookie']) {
      expect(isSensitiveHeader(h)).toBe(true);
    }
    expect(isSensitiveHeader('content-type')).toBe(false);
    expect(redactHeaders({ 'x-amz-security-token': 'tok', accept: '*/*' })).toEqual({ 'x-amz-security-token': '[redacted]', accept: '*/*' });
  });
});
