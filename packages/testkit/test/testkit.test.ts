// The test support itself: until/nextEvent resolve on the event and name what they waited for
// when it never comes; LogSink keeps lines and wakes a waiter; startUpstream echoes; freePort
// gives a port that can be bound.
import { EventEmitter } from 'node:events';
import { createServer } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { deferred, freePort, LogSink, nextEvent, send, startUpstream, until } from '../src/index.js';

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
