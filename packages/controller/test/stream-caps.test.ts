// The stream caps alone: streams at once, not yet admitted per address, per Gateway; the gauge
// of open streams is read from a real registry.
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { peerAddress, StreamCaps } from '../src/snapshots/stream-caps.js';
import { MAX_PENDING_PER_PEER } from '../src/snapshots/stream-limits.js';

function caps(maxStreams: number, maxStreamsPerGateway = 2) {
  const registry = new Registry();
  const open = new Gauge({ name: 'open', help: 'h', registers: [registry] });
  return { caps: new StreamCaps({ maxStreams, maxStreamsPerGateway }, open), open: async () => (await open.get()).values[0]?.value };
}

describe('stream caps', () => {
  it('refuses a stream over the number open at once, counting it until it closes', async () => {
    const t = caps(2);
    const a = t.caps.opened('ipv4:10.0.0.1:1');
    const b = t.caps.opened('ipv4:10.0.0.2:1');
    const c = t.caps.opened('ipv4:10.0.0.3:1');
    expect([a.refused, b.refused, c.refused?.limit]).toEqual([undefined, undefined, 'streams']);
    expect(c.refused?.message).toBe('the controller serves at most 2 streams at once (--snapshot-max-streams); retry later');
    expect(await t.open()).toBe(3);
    c.slot.close();
    c.slot.close();
    expect(await t.open()).toBe(2);
    a.slot.close();
    expect(t.caps.opened('ipv4:10.0.0.3:1').refused).toBeUndefined();
  });

  it('refuses more streams waiting for admission from one address, whatever their ports; admission frees the room', () => {
    const t = caps(1000);
    const slots = Array.from({ length: MAX_PENDING_PER_PEER }, (_, i) => t.caps.opened(`ipv6:[fd00::7]:${40000 + i}`));
    expect(slots.every((s) => s.refused === undefined)).toBe(true);
    const over = t.caps.opened('ipv6:[fd00::7]:50000');
    expect(over.refused).toEqual({ limit: 'pending_per_peer', message: `${MAX_PENDING_PER_PEER} streams from fd00::7 are waiting to be admitted, the most one address may have; retry later` });
    over.slot.close();
    expect(t.caps.opened('ipv4:10.0.0.1:1').refused).toBeUndefined();
    slots[0]!.slot.admitted();
    slots[0]!.slot.admitted();
    expect(t.caps.opened('ipv6:[fd00::7]:50001').refused).toBeUndefined();
    expect(t.caps.opened('ipv6:[fd00::7]:50002').refused?.limit).toBe('pending_per_peer');
    // An admitted stream that closes does not free a second place.
    slots[0]!.slot.close();
    expect(t.caps.opened('ipv6:[fd00::7]:50003').refused?.limit).toBe('pending_per_peer');
    slots[1]!.slot.close();
    expect(t.caps.opened('ipv6:[fd00::7]:50004').refused).toBeUndefined();
  });

  it("refuses a Gateway's stream once it has the most it may have", () => {
    const t = caps(1000, 2);
    expect(t.caps.gatewayFull('edge/public', 1)).toBeUndefined();
    expect(t.caps.gatewayFull('edge/public', 2)).toEqual({
      limit: 'streams_per_gateway',
      message: 'Gateway edge/public has 2 streams open, the most one Gateway may have (--snapshot-max-streams-per-gateway); retry later',
    });
  });

  it.each([
    ['ipv4:10.0.0.7:51234', '10.0.0.7'],
    ['ipv6:[::1]:51234', '::1'],
    ['127.0.0.1:80', '127.0.0.1'],
    ['unix:/run/x.sock', 'unix:/run/x.sock'],
  ])('the address of peer %s is %s', (peer, address) => {
    expect(peerAddress(peer)).toBe(address);
  });
});
