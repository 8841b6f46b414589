// Snapshot stream payload: size and encode/decode time of the wire JSON (encodeSnapshot /
// decodeSnapshot, the validator included) at 1k, 3k and 10k routes, and the proxy's compile of
// the decoded snapshot (route tables; what a proxy does after decoding, before the swap).
// Printed, not asserted.
// Run after `pnpm build`: node bench/snapshot-wire.mjs
import { gzipSync } from 'node:zlib';
import { decodeSnapshot, encodeSnapshot, standaloneToSnapshot, validateStandaloneConfig } from '../packages/api/dist/index.js';
import { compileSnapshot } from '../packages/proxy/dist/index.js';

function snapshotWith(routes) {
  const list = Array.from({ length: routes }, (_, i) => ({
    name: `route-${i}`,
    matches: [{ path: { type: 'PathPrefix', value: `/team-${i}/v1` }, headers: [{ name: 'x-tenant', value: `tenant-${i % 50}` }] }],
    filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: `r${i}` }] } }],
    backends: [{ host: `198.18.${(i >> 8) & 255}.${i & 255}:8080`, weight: 1 }],
  }));
  const config = { binds: [{ port: 8080, listeners: [{ name: 'main', protocol: 'HTTP', routes: list }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'bench'), { kind: 'controller', gateway: 'bench/gw' });
}

function time(fn, rounds) {
  fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) fn();
  return Number(process.hrtime.bigint() - t) / 1e6 / rounds;
}

for (const routes of [1000, 3000, 10000]) {
  const s = snapshotWith(routes);
  const text = encodeSnapshot(s);
  const rounds = routes >= 10000 ? 5 : 20;
  const enc = time(() => encodeSnapshot(s), rounds);
  const dec = time(() => decodeSnapshot(text), rounds);
  const parse = time(() => JSON.parse(text), rounds);
  const decoded = decodeSnapshot(text);
  const compile = time(() => compileSnapshot(decoded), rounds);
  console.log(
    `${routes} routes: ${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB JSON (${(gzipSync(text).length / 1024).toFixed(0)} KiB gzipped); ` +
      `encode ${enc.toFixed(1)} ms, decode+validate ${dec.toFixed(1)} ms (of which JSON.parse ${parse.toFixed(1)} ms), proxy compile ${compile.toFixed(1)} ms`,
  );
}
