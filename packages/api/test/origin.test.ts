// Origins and origin patterns: what an Origin header is (and what is not one), what a Referer's
// origin is, and which patterns match which origins, by class of input.
import { describe, expect, it } from 'vitest';
import { compilePatterns, matchesPatterns, parseOrigin, refererOrigin, requestOrigin, serializeOrigin } from '../src/index.js';

describe('parseOrigin', () => {
  it.each([
    ['https://example.com', 'https://example.com'],
    ['HTTPS://EXAMPLE.COM', 'https://example.com'],
    ['https://example.com:443', 'https://example.com'],
    ['http://example.com:80', 'http://example.com'],
    ['http://example.com:8080', 'http://example.com:8080'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['http://[::1]:3000', 'http://[::1]:3000'],
    ['https://example.com.', 'https://example.com.'],
  ])('%s is the origin %s', (value, serialized) => {
    const o = parseOrigin(value);
    expect(o && serializeOrigin(o)).toBe(serialized);
  });

  it.each(['null', '', 'example.com', 'https://', 'https://example.com/', 'https://example.com/path', 'https://example.com?x', 'https://example.com#f', 'https://user@example.com', 'https://user:pw@example.com',
    'https://example.com:0', 'https://example.com:65536', 'https://example.com:0443', 'https://example.com:', 'ftp://example.com', 'file://', 'chrome-extension://abc', 'https://exa mple.com', 'https://example.com, https://b.com',
    'https://ex%41mple.com', `https://${'a'.repeat(3000)}.com`])('%j is not an origin', (value) => {
    expect(parseOrigin(value)).toBeNull();
  });
});

describe('refererOrigin', () => {
  it.each([
    ['https://example.com/page?q=1#x', 'https://example.com'],
    ['https://user:pw@example.com/', 'https://example.com'],
    ['https://example.com@evil.test/', 'https://evil.test'],
    ['http://EXAMPLE.com:80/x', 'http://example.com'],
  ])('%s has the origin %s', (value, serialized) => {
    const o = refererOrigin(value);
    expect(o && serializeOrigin(o)).toBe(serialized);
  });

  it.each(['', 'not a url', 'about:blank', 'data:text/html,x', 'file:///etc/passwd', '/relative'])('%j has no http(s) origin', (value) => {
    expect(refererOrigin(value)).toBeNull();
  });
});

describe('requestOrigin', () => {
  it('is the scheme and the Host, with its default port for the scheme', () => {
    expect(serializeOrigin(requestOrigin('http', 'API.example.com')!)).toBe('http://api.example.com');
    expect(serializeOrigin(requestOrigin('https', 'api.example.com:443')!)).toBe('https://api.example.com');
    expect(serializeOrigin(requestOrigin('https', 'api.example.com:8443')!)).toBe('https://api.example.com:8443');
    expect(requestOrigin('http', 'a/b')).toBeNull();
  });
});

describe('origin patterns', () => {
  const patterns = compilePatterns(['https://www.foo.com', 'https://*.bar.com', 'http://*:8080', 'http://localhost:3000']);
  const matches = (value: string) => matchesPatterns(patterns, parseOrigin(value)!);

  it.each(['https://www.foo.com', 'https://www.foo.com:443', 'https://a.bar.com', 'https://a.b.c.bar.com', 'http://anything.test:8080', 'http://localhost:3000'])('match %s', (v) => {
    expect(matches(v)).toBe(true);
  });

  it.each(['http://www.foo.com', 'https://www.foo.com:8443', 'https://foo.com', 'https://bar.com', 'https://evilbar.com', 'https://a.bar.com.evil.test', 'http://a.bar.com', 'https://a.bar.com:444', 'http://localhost', 'http://localhost:3001', 'https://www.foo.com.'])(
    'do not match %s',
    (v) => {
      expect(matches(v)).toBe(false);
    },
  );

  it('"*" matches every http(s) origin', () => {
    expect(matchesPatterns(compilePatterns(['*']), parseOrigin('https://x.example:1')!)).toBe(true);
  });
});
