// The one host:port validator: what it accepts, what it says about what it refuses, and that
// the CRD pattern generated from the same rules agrees with it.
import { describe, expect, it } from 'vitest';
import { formatHostPort, hostPattern, hostPortPattern, parseHost, parseHostPort, parsePort, requireHostPort } from '../src/host-port.js';

const ok = (text: string, rules = {}) => {
  const r = parseHostPort(text, rules);
  if (!r.ok) throw new Error(`${text}: ${r.problem}`);
  return r.value;
};
const problem = (text: string, rules = {}) => {
  const r = parseHostPort(text, rules);
  if (r.ok) throw new Error(`${text} was accepted`);
  return r.problem;
};

describe('parseHostPort', () => {
  it('reads DNS names, IPv4 and bracketed IPv6', () => {
    expect(ok('127.0.0.1:9000')).toEqual({ host: '127.0.0.1', kind: 'ipv4', port: 9000 });
    expect(ok('llm.internal:8080')).toEqual({ host: 'llm.internal', kind: 'dns', port: 8080 });
    expect(ok('localhost:1')).toEqual({ host: 'localhost', kind: 'dns', port: 1 });
    expect(ok('[::1]:65535')).toEqual({ host: '::1', kind: 'ipv6', port: 65535 });
    expect(ok('[2001:db8::1]:443')).toEqual({ host: '2001:db8::1', kind: 'ipv6', port: 443 });
    expect(ok('rls.tollgate-system.svc.cluster.local:8081').kind).toBe('dns');
  });

  it('refuses ports outside 1-65535, naming the range', () => {
    expect(problem('127.0.0.1:99999')).toBe('port 99999 is out of range; expected a port from 1 to 65535');
    expect(problem('127.0.0.1:65536')).toBe('port 65536 is out of range; expected a port from 1 to 65535');
    expect(problem('127.0.0.1:0')).toBe('port 0 is only allowed for an address to listen on; expected a port from 1 to 65535');
    expect(problem('127.0.0.1:http')).toBe('the port "http" is not a number; expected a port from 1 to 65535');
    expect(problem('127.0.0.1:')).toBe('the port "" is not a number; expected a port from 1 to 65535');
    expect(problem('127.0.0.1:-1')).toMatch(/is not a number/);
  });

  it('allows port 0 only where the caller listens', () => {
    expect(ok('127.0.0.1:0', { ephemeralPort: true }).port).toBe(0);
    expect(problem('127.0.0.1:70000', { ephemeralPort: true })).toBe('port 70000 is out of range; expected a port from 0 to 65535 (0 picks a free port)');
  });

  it('says what is wrong with the host', () => {
    expect(problem('x')).toBe('expected <host>:<port>, e.g. 127.0.0.1:9000 or llm.internal:8080');
    expect(problem(':9000')).toBe('the host is missing; expected <host>:<port>, e.g. 127.0.0.1:9000 or llm.internal:8080');
    expect(problem('999.0.0.1:80')).toBe('999.0.0.1 is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)');
    expect(problem('1.2.3:80')).toMatch(/is not an IPv4 address/);
    expect(problem('::1:9000')).toBe('an IPv6 address takes brackets, e.g. [::1]:9000');
    expect(problem('[::1]')).toBe('expected [<IPv6 address>]:<port>, e.g. [::1]:9000');
    expect(problem('[zz::1]:80')).toBe('[zz::1] is not an IPv6 address, e.g. [::1] or [2001:db8::1]');
    expect(problem('-llm.internal:80')).toMatch(/is not a DNS name \(labels are letters, digits and "-"/);
    expect(problem('llm..internal:80')).toMatch(/has an empty label/);
    expect(problem('llm_x:80')).toMatch(/is not a DNS name/);
    expect(problem('llm.123:80')).toMatch(/its last label must start with a letter/);
    expect(problem(`${'a'.repeat(64)}.example:80`)).toMatch(/is longer than 63 characters/);
    expect(problem(`${'abcdefghi.'.repeat(26)}com:80`)).toMatch(/longer than 253 characters/);
    expect(problem('llm\r\nx:80')).toMatch(/is not a DNS name/);
  });

  it('takes a default host for ":<port>" when the caller has one', () => {
    expect(ok(':15000', { defaultHost: '127.0.0.1' })).toEqual({ host: '127.0.0.1', kind: 'ipv4', port: 15000 });
  });

  it('requireHostPort names the field in its error', () => {
    expect(() => requireHostPort('h:99999', '--admin-addr')).toThrow('--admin-addr: got "h:99999"; port 99999 is out of range; expected a port from 1 to 65535');
  });

  it('formats IPv6 back with brackets', () => {
    expect(formatHostPort(ok('[::1]:80'))).toBe('[::1]:80');
    expect(formatHostPort(ok('a.b:80'))).toBe('a.b:80');
  });
});

describe('parsePort and parseHost', () => {
  it('check a port flag and a bind address alone', () => {
    expect(parsePort('8080')).toEqual({ ok: true, value: 8080 });
    expect(parsePort('0', { ephemeralPort: true })).toEqual({ ok: true, value: 0 });
    expect(parsePort('eighty')).toEqual({ ok: false, problem: 'the port "eighty" is not a number; expected a port from 1 to 65535' });
    expect(parseHost('0.0.0.0')).toEqual({ ok: true, value: { host: '0.0.0.0', kind: 'ipv4' } });
    expect(parseHost('::')).toEqual({ ok: true, value: { host: '::', kind: 'ipv6' } });
    expect(parseHost('[::]')).toEqual({ ok: true, value: { host: '::', kind: 'ipv6' } });
    expect(parseHost('')).toMatchObject({ ok: false });
  });
});

describe('the CRD pattern', () => {
  // The API server runs the pattern; the proxy and controller run parseHostPort. They must agree
  // (the pattern checks IPv6 addresses by their characters only).
  const samples = [
    '127.0.0.1:9000', 'llm.internal:8080', 'localhost:1', '[::1]:65535', 'rls.ns.svc:8081', 'a-b.c-d:443',
    '127.0.0.1:99999', '127.0.0.1:65536', '127.0.0.1:0', 'x', ':9000', '999.0.0.1:80', '1.2.3:80', '::1:9000',
    '[::1]', '-llm:80', 'llm-:80', 'llm..internal:80', 'llm_x:80', 'llm.123:80', `${'a'.repeat(64)}.example:80`, 'h:080',
    'h:00080', 'h:1e3', 'llm\nx:80',
  ];
  it.each(samples)('agrees with parseHostPort on %j', (text) => {
    for (const ephemeralPort of [false, true]) {
      // Leading zeros are numbers to the parser; the pattern refuses them, which is the safer side.
      const expected = parseHostPort(text, { ephemeralPort }).ok && !/:0[0-9]/.test(text);
      expect(new RegExp(hostPortPattern({ ephemeralPort })).test(text), `${text} ephemeral=${ephemeralPort}`).toBe(expected);
    }
  });
  it('has a host-only form for bind addresses', () => {
    expect(new RegExp(hostPattern()).test('0.0.0.0')).toBe(true);
    expect(new RegExp(hostPattern()).test('0.0.0.0:80')).toBe(false);
  });
});
