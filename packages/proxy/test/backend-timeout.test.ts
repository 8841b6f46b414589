// timeouts.backendRequest is kept to the millisecond: a sub-second deadline fires when it says,
// not on the next tick of a coarse (about 1 s) timer wheel.
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const open: (TestGateway | Upstream)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('timeouts.backendRequest', () => {
  it('250ms answers 504 before a backend that takes 480ms has answered', async () => {
    // A coarse timer fires a 250 ms deadline 0.5 to 1 s late; a backend answering at 480 ms
    // would beat it. The test orders two events; it measures no time.
    let backendAnswered = false;
    const up = await startUpstream((_req, res) => {
      setTimeout(() => {
        backendAnswered = true;
        res.end('late answer');
      }, 480);
    });
    open.push(up);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', timeouts: { backendRequest: '250ms' }, backends: [{ host: up.host }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(504);
    expect(r.body).toContain('upstream request timeout');
    expect(backendAnswered).toBe(false);
  });
});
