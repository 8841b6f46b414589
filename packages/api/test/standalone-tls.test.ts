// The standalone config's tlsBinds: checked against the HTTP binds (one bind a port, listener
// names unique across both), each error naming its field; a valid one becomes the IR.
import { describe, expect, it } from 'vitest';
import { standaloneToSnapshot, validateStandaloneConfig } from '../src/index.js';
import { problems as problemsOf } from './support.js';

const http = { port: 8080, listeners: [{ name: 'web', protocol: 'HTTP', routes: [] }] };
const pass = (name: string, hostname?: string) => ({ name, ...(hostname ? { hostname } : {}), tls: { mode: 'Passthrough' }, routes: [{ name: 'r', hostnames: ['*.example.com'], backends: [{ host: '127.0.0.1:9443', weight: 2 }] }] });

describe('tlsBinds in the standalone config', () => {
  it('refuses a port of binds, a listener name used by an HTTP listener, two catch-all listeners on a port, an unknown mode', () => {
    expect(problemsOf({ binds: [http], tlsBinds: [{ port: 8080, listeners: [pass('web'), pass('b')] }] })).toEqual([
      'tlsBinds[0].port: port 8080 is already bound (binds or an earlier tlsBinds entry); one bind per port',
      expect.stringMatching(/^tlsBinds\[0\]\.listeners\[1\]\.hostname: /),
      'tlsBinds[0].listeners[0].name: listener name "web" is used twice; give each listener its own name',
    ]);
    expect(problemsOf({ binds: [], tlsBinds: [{ port: 8443, listeners: [{ ...pass('a'), tls: { mode: 'Decrypt' } }] }] }).join('\n')).toMatch(/tlsBinds\/?\[?0\]?.*tls/);
  });

  it('becomes TLS binds of the snapshot: names <listener>/<route>, default weight 1', () => {
    const cfg = validateStandaloneConfig({ binds: [http], tlsBinds: [{ port: 8443, listeners: [pass('edge', 'a.example.com'), { ...pass('any'), routes: [{ name: 'x', backends: [{ host: 'db.internal:5432' }] }] }] }] });
    const s = standaloneToSnapshot(cfg, { kind: 'file', path: 'c.yaml' });
    expect(s.tlsBinds).toEqual([
      {
        port: 8443,
        address: '0.0.0.0',
        listeners: [
          { name: 'edge', hostname: 'a.example.com', tls: { mode: 'Passthrough' }, routes: [{ name: 'edge/r', origin: { kind: 'config', path: 'tlsBinds[0].listeners[0].routes[0]' }, hostnames: ['*.example.com'], backends: [{ kind: 'static', name: '127.0.0.1:9443', host: '127.0.0.1', port: 9443, weight: 2 }] }] },
          { name: 'any', hostname: null, tls: { mode: 'Passthrough' }, routes: [{ name: 'any/x', origin: { kind: 'config', path: 'tlsBinds[0].listeners[1].routes[0]' }, hostnames: [], backends: [{ kind: 'static', name: 'db.internal:5432', host: 'db.internal', port: 5432, weight: 1 }] }] },
        ],
      },
    ]);
  });
});
