// The test support itself: until/nextEvent resolve on the event and name what they waited for
// when it never comes; LogSink keeps lines and wakes a waiter; startUpstream echoes; freePort
// gives a port that can be bound; onFreePorts starts again when a probed port is taken.
import { EventEmitter } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { deferred, freePort, isPortInUse, LogSink, nextEvent, onFreePort, onFreePorts, send, startUpstream, until } from '../src/index.js';

describe('until and nextEvent', () => {
  it('until resolves with the first truthy value, also after failed tries', async () => {
    let n = 0;
    expect(await until(() => (++n >= 3 ? `try ${n}` : null))).toBe('try 3');
    let calls = 0;
    expect(
      await until(async () => {
        if (++calls < 2) throw new Error('not yet');
        return true;
      }),
    ).toBe(true);
  });

  it('until rejects after its deadline, naming what it waited for and the last failure', async () => {
    await expect(until(() => { throw new Error('still down'); }, { timeoutMs: 20, what: 'the service' })).rejects.toThrow(/waiting for the service: last try failed with still down/);
  });

  it('nextEvent resolves with the arguments of the event, and names the event on timeout', async () => {
    const e = new EventEmitter();
    const got = nextEvent(e, 'ready');
    e.emit('ready', 1, 'two');
    expect(await got).toEqual([1, 'two']);
    await expect(nextEvent(e, 'never', { timeoutMs: 20 })).rejects.toThrow(/waiting for the "never" event/);
  });

  it('deferred resolves from outside', async () => {
    const d = deferred<number>();
    d.resolve(7);
    expect(await d.promise).toBe(7);
  });
});

describe('LogSink', () => {
  it('keeps each JSON line and wakes a waiter when a matching line arrives', async () => {
    const sink = new LogSink();
    const log = pino({ level: 'info' }, sink);
    const waiting = sink.waitFor((l) => l.msg === 'second');
    log.info('first');
    log.warn({ k: 1 }, 'second');
    expect((await waiting).k).toBe(1);
    expect(sink.messages()).toEqual(['first', 'second']);
  });
});

describe('servers and ports', () => {
  it('startUpstream echoes the request; freePort can be bound', async () => {
    const up = await startUpstream();
    try {
      const r = await send(`${up.url}/p?q=1`, { method: 'POST', headers: { 'x-a': 'b' }, body: 'hi' });
      expect(JSON.parse(r.body)).toMatchObject({ method: 'POST', url: '/p?q=1', headers: { 'x-a': 'b' }, body: 'hi' });
      expect(up.requests).toHaveLength(1);
    } finally {
      await up.close();
    }
    const port = await freePort();
    const s = createServer();
    await new Promise<void>((resolve, reject) => s.once('error', reject).listen(port, '127.0.0.1', resolve));
    s.close();
  });
});

describe('onFreePorts', () => {
  const listen = (port: number) =>
    new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject).listen(port, '127.0.0.1', () => resolve(s));
    });

  it('starts again on fresh ports when another process takes a probed port before the bind', async () => {
    const tried: number[][] = [];
    const thief: ReturnType<typeof createServer>[] = [];
    const server = await onFreePorts(2, async (ports) => {
      tried.push(ports);
      // The first time, someone else binds the second port between the probe and our bind.
      if (tried.length === 1) thief.push(await listen(ports[1]!));
      const a = await listen(ports[0]!);
      try {
        await listen(ports[1]!).then((b) => a.once('close', () => b.close()));
      } catch (err) {
        a.close();
        throw err;
      }
      return a;
    });
    try {
      expect(tried).toHaveLength(2);
      expect(new Set(tried[0]).size).toBe(2);
      expect((server.address() as AddressInfo).port).toBe(tried[1]![0]);
    } finally {
      server.close();
      for (const t of thief) t.close();
    }
  });

  it('does not retry other failures, and gives up after the attempts', async () => {
    let calls = 0;
    await expect(onFreePort(async () => (calls++, Promise.reject(new Error('bad config'))))).rejects.toThrow('bad config');
    expect(calls).toBe(1);
    await expect(onFreePort(async () => (calls++, Promise.reject(Object.assign(new Error('x'), { code: 'EADDRINUSE' }))), { attempts: 3 })).rejects.toThrow('x');
    expect(calls).toBe(4);
  });

  it('knows a taken port by Node code, catalog code, cause, or the words a child printed', () => {
    expect(isPortInUse(Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:1'), { code: 'EADDRINUSE' }))).toBe(true);
    expect(isPortInUse(Object.assign(new Error('bind 0.0.0.0:1 (listener a) is already in use'), { code: 'TG_BIND_IN_USE' }))).toBe(true);
    expect(isPortInUse(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'EADDRINUSE' }) }))).toBe(true);
    expect(isPortInUse(new Error('redis-server exited before PONG:\nCould not create server TCP listening socket 127.0.0.1:1: bind: Address already in use'))).toBe(true);
    expect(isPortInUse(Object.assign(new Error('admin address 1.2.3.4:1 cannot be bound: EADDRNOTAVAIL'), { code: 'TG_ADMIN_BIND' }))).toBe(false);
    expect(isPortInUse(new Error('binds[0].port: got 70000'))).toBe(false);
  });
});
