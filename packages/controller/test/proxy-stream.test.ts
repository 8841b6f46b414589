// One proxy's state alone: which versions it is sent, what an ACK and a NACK change, and when a
// delta may be sent to it.
import { describe, expect, it } from 'vitest';
import { MAX_NACK_ERROR, ProxyStream, type Pending } from '../src/snapshots/proxy-stream.js';
import { Rejections } from '../src/snapshots/rejections.js';

const link = { peer: 'ipv4:10.0.0.7:51234', send: () => undefined, end: () => undefined };
const proxy = (version = '', deltas = true) => new ProxyStream(link, 'edge/public', 'proxy-0', 'edge', version, deltas);
const pending = (version: string, nonce: string, form: Pending['form'] = 'full'): Pending => ({ version, nonce, form, sentAt: 0n, timer: setTimeout(() => undefined, 0) });

describe('proxy stream state', () => {
  it('is sent a version it neither holds nor refused, one push at a time', () => {
    const p = proxy('v1');
    expect([p.acked, p.wants('v1'), p.wants('v2')]).toEqual(['v1', false, true]);
    p.sent(pending('v2', 'n2'));
    expect(p.wants('v3')).toBe(false);
    expect(p.ack('v2', 'other-nonce')).toBeUndefined();
    expect(p.ack('v3', 'n2')).toBeUndefined();
    expect(p.ack('v2', 'n2')).toMatchObject({ answered: { version: 'v2' }, previous: 'v1' });
    expect([p.acked, p.pending, p.wants('v3')]).toEqual(['v2', null, true]);
  });

  it('a refused version is not wanted again; the next push after a NACK is the full form', () => {
    const p = proxy('v1');
    expect(p.deltaBase()).toBe('v1');
    p.sent(pending('v2', 'n2', 'delta'));
    expect(p.nack('stale', 'x', false)).toEqual({ kind: 'stale' });
    expect(p.nack('n2', 'port taken', false)).toEqual({ kind: 'refused', version: 'v2', error: 'port taken' });
    expect([p.wants('v2'), p.wants('v3'), p.deltaBase(), p.refusing]).toEqual([false, true, null, true]);
    expect(p.view().lastNack).toMatchObject({ version: 'v2', error: 'port taken' });
    p.sent(pending('v3', 'n3'));
    expect(p.deltaBase()).toBe('v1');
    p.ack('v3', 'n3');
    expect([p.refusing, p.view().lastNack]).toEqual([false, null]);
  });

  it('a delta it cannot resolve is sent again in full and is no refusal; a full form it asks again for is one', () => {
    const p = proxy('v1');
    p.sent(pending('v2', 'n2', 'delta'));
    expect(p.nack('n2', 'unknown base', true)).toEqual({ kind: 'resend_full', version: 'v2', error: 'unknown base' });
    expect([p.wants('v2'), p.deltaBase(), p.refusing]).toEqual([true, null, false]);
    p.sent(pending('v2', 'n2b'));
    expect(p.nack('n2b', 'unknown base', true).kind).toBe('refused');
  });

  it('keeps a NACK reason bounded and never empty; a proxy without deltas has no base', () => {
    const p = proxy('v1', false);
    expect(p.deltaBase()).toBeNull();
    p.sent(pending('v2', 'n2'));
    expect(p.nack('n2', 'x'.repeat(10_000), false)).toMatchObject({ error: 'x'.repeat(MAX_NACK_ERROR) });
    p.sent(pending('v3', 'n3'));
    expect(p.nack('n3', '', false)).toMatchObject({ error: 'no reason given' });
  });

  it('a timeout frees the push it names only', () => {
    const p = proxy();
    expect(p.acked).toBeNull();
    p.sent(pending('v1', 'n1'));
    expect(p.timedOut('n0')).toBeUndefined();
    expect(p.timedOut('n1')?.version).toBe('v1');
    expect(p.wants('v1')).toBe(true);
  });
});

describe('gateway rejections', () => {
  const standing = (acked: string | null, refusing = false) => ({ acked, refusing });

  it('holds until every proxy ACKed a version other than the refused one', () => {
    const r = new Rejections();
    expect(r.refused('g', { version: 'v1', pod: 'b', error: 'e' })).toBe(true);
    expect(r.refused('g', { version: 'v1', pod: 'a', error: 'e' })).toBe(false);
    expect(r.refused('g', { version: 'v1', pod: 'a', error: 'other' })).toBe(true);
    for (const held of [[standing(null)], [standing('v1')], [standing('v0', true)], [standing('v2'), standing('v1')]]) {
      expect(r.settle('g', held)).toBe(false);
      expect(r.get('g')?.version).toBe('v1');
    }
    expect(r.settle('g', [standing('v2'), standing('v0')])).toBe(true);
    expect([r.get('g'), r.settle('g', [])]).toEqual([undefined, false]);
  });

  it('is forgotten with its Gateway', () => {
    const r = new Rejections();
    r.refused('g', { version: 'v1', pod: 'a', error: 'e' });
    r.forget('g');
    expect(r.get('g')).toBeUndefined();
  });
});
