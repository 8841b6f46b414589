// Snapshot stream payload at 1k, 3k and 10k routes: size, and what each side spends per snapshot.
// Printed, not asserted. Run after `pnpm build`: node bench/snapshot-wire.mjs [--routes 1000,3000]
//
// Two cases per size:
// - cold: every route is new to the process (a controller's first translation, a proxy's first
//   snapshot): encode, decode+validate (of which JSON.parse), proxy compile.
// - one route changed (what a change costs after that): a series of snapshots each differing
//   from the previous one in its last route, the other route objects reused as the translator
//   reuses them; timed per snapshot: the controller's version hash (withVersion from the
//   previous snapshot, as the controller computes it), its check before offering
//   (snapshotProblems), encode into the stream's parts (encodeSnapshotParts),
//   and the proxy's decodeParts with the decoder that decoded the previous snapshot, then compile;
//   then the same as a delta against the previous snapshot (encodeSnapshotDelta, what the stream
//   sends a proxy that holds it): its size, encode and decode, and the proxy's compile reusing
//   the previous compiled snapshot's routes (what `runtime.apply` does).
// - and, for a proxy serving on several threads, what each worker thread's apply costs beside the
//   main thread's: the snapshot handed over relative to the last one (only the changed routes
//   cross; the worker keeps its route objects and what it compiled for them), against handing it
//   over whole (every route cloned across and compiled again): hand-over, structured clone (as
//   postMessage makes it), the worker's open and compile.
// - a route inserted in the middle of the list (where the controller puts a new route of middle
//   precedence), and one removed from the middle, each snapshot after the last: the proxy's
//   decode of the delta and compile reusing the previous, and each further worker thread's
//   relative hand-over.
import { gzipSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import * as api from '../packages/api/dist/index.js';
import { compileSnapshot } from '../packages/proxy/dist/index.js';
import { standalonePickerDeps } from '../packages/proxy/dist/routing/backend-picker.js';
import { LimiterStore } from '../packages/proxy/dist/ratelimit/local/limiter.js';

/** The proxy's limit state (no route here has limits; the compile needs one). */
const limiterStore = () => new LimiterStore(() => Date.now(), { maxKeys: 10_000 });

/** The hand-over to worker threads, in builds that have one. */
const handover = await import('../packages/proxy/dist/process/workers/snapshot-handover.js').catch(() => null);

const { decodeSnapshot, encodeSnapshot, standaloneToSnapshot, validateStandaloneConfig, withVersion } = api;
const { values } = parseArgs({ options: { routes: { type: 'string' } } });
const SIZES = (values.routes ?? '1000,3000,10000').split(',').map(Number);

const routeConfig = (i, tag = '') => ({
  name: `route-${i}${tag}`,
  matches: [{ path: { type: 'PathPrefix', value: `/team-${i}${tag}/v1` }, headers: [{ name: 'x-tenant', value: `tenant-${i % 50}` }] }],
  filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: `r${i}` }] } }],
  backends: [{ host: `198.18.${(i >> 8) & 255}.${i & 255}:8080`, weight: 1 }],
});

function snapshotWith(routes) {
  const config = { binds: [{ port: 8080, listeners: [{ name: 'main', protocol: 'HTTP', routes: Array.from({ length: routes }, (_, i) => routeConfig(i)) }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'bench'), { kind: 'controller', gateway: 'bench/gw' });
}

/** A fresh route object (new to every cache), as the translator builds for a changed route. */
function freshRoute(i, tag) {
  const one = snapshotWith(0);
  const config = { binds: [{ port: 8080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [routeConfig(i, tag)] }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'bench'), one.source).binds[0].listeners[0].routes[0];
}

/** `base` with its last route replaced by a new object; every other route object is shared. */
function withLastRouteChanged(base, tag) {
  const bind = base.binds[0];
  const listener = bind.listeners[0];
  const routes = [...listener.routes.slice(0, -1), freshRoute(listener.routes.length - 1, tag)];
  return { source: base.source, binds: [{ ...bind, listeners: [{ ...listener, routes }] }] };
}

/** `base` with a new route inserted in the middle of its list; every other route object is shared. */
function withMiddleRouteInserted(base, tag) {
  const bind = base.binds[0];
  const listener = bind.listeners[0];
  const at = listener.routes.length >> 1;
  const routes = [...listener.routes.slice(0, at), freshRoute(100000 + at, tag), ...listener.routes.slice(at)];
  return { source: base.source, binds: [{ ...bind, listeners: [{ ...listener, routes }] }] };
}

/** `base` with the route in the middle of its list removed; every other route object is shared. */
function withMiddleRouteRemoved(base) {
  const bind = base.binds[0];
  const listener = bind.listeners[0];
  const at = listener.routes.length >> 1;
  const routes = [...listener.routes.slice(0, at), ...listener.routes.slice(at + 1)];
  return { source: base.source, binds: [{ ...bind, listeners: [{ ...listener, routes }] }] };
}

/**
 * A series of `n` snapshots from `s`, each `change` of the last, as deltas: the proxy's compile
 * reusing the previous compiled snapshot, and a worker thread's apply of the relative hand-over.
 */
function changeSeries(s, text, n, change, label) {
  const routes = s.binds[0].listeners[0].routes.length;
  const decoder = new api.SnapshotDecoder();
  decoder.decode(text);
  const picking = standalonePickerDeps();
  const limiters = limiterStore();
  let previous = compileSnapshot(decoder.decode(text), { limiters, makeGlobal: null, picking });
  let base = { version: s.version, positions: api.routePositions(s) };
  const sender = handover && new handover.HandoverSender();
  const worker = handover && { receiver: new handover.HandoverReceiver(), limiters: limiterStore(), previous: null };
  const workerApply = (w, h) => {
    const { snapshot, applied } = w.receiver.open(globalThis.structuredClone(h));
    w.previous = compileSnapshot(snapshot, { limiters: w.limiters, makeGlobal: null, picking, previous: w.previous });
    w.limiters.commit();
    applied();
  };
  if (handover) workerApply(worker, sender.next(previous.ir).whole());
  const sum = { decode: 0, compile: 0, worker: 0 };
  const clock = clockInto(sum);
  let sent = s;
  let content = s;
  for (let i = 0; i < n; i++) {
    content = change(content, `-m${i}`);
    const snap = withVersion(content, sent);
    sent = snap;
    const delta = api.encodeSnapshotDelta(snap, base);
    const got = clock('decode', () => decoder.decodeParts(delta));
    previous = clock('compile', () => compileSnapshot(got, { limiters, makeGlobal: null, picking, previous }));
    limiters.commit();
    base = { version: snap.version, positions: api.routePositions(snap) };
    if (!handover) continue;
    const out = sender.next(got);
    clock('worker', () => workerApply(worker, out.relative));
  }
  const per = (key) => f(sum[key] / n);
  console.log(`${routes} routes, ${label}: proxy decode+validate ${(sum.decode / n).toFixed(2)} ms, compile reusing the previous ${per('compile')}` + (handover ? `; each further worker thread: handed over relative to the last ${per('worker')} (hand-over, clone, open, compile)` : '') + ` (mean of ${n})`);
}

function time(fn, rounds) {
  fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) fn();
  return Number(process.hrtime.bigint() - t) / 1e6 / rounds;
}

/** A timer adding each call's milliseconds to `sum[key]`, returning what the call returned. */
const clockInto = (sum) => (key, fn) => {
  const t = process.hrtime.bigint();
  const r = fn();
  sum[key] += Number(process.hrtime.bigint() - t) / 1e6;
  return r;
};

const f = (x) => `${x.toFixed(1)} ms`;
// The incremental API exists from the route-by-route encoding on; before it every snapshot cost the cold figures.
const incremental = typeof api.SnapshotDecoder === 'function';

for (const routes of SIZES) {
  const s = snapshotWith(routes);
  const text = encodeSnapshot(s);
  const rounds = routes >= 10000 ? 5 : 20;
  // Cold: fresh objects each round, so no per-route cache helps.
  const fresh = Array.from({ length: rounds + 1 }, () => snapshotWith(routes));
  let k = 0;
  const enc = time(() => encodeSnapshot(fresh[k++ % fresh.length]), rounds);
  const dec = time(() => decodeSnapshot(text), rounds);
  const parse = time(() => JSON.parse(text), rounds);
  const decoded = decodeSnapshot(text);
  const compile = time(() => compileSnapshot(decoded), rounds);
  console.log(
    `${routes} routes: ${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB JSON (${(gzipSync(text).length / 1024).toFixed(0)} KiB gzipped); cold: ` +
      `encode ${f(enc)}, decode+validate ${f(dec)} (of which JSON.parse ${f(parse)}), proxy compile ${f(compile)}`,
  );
  if (!incremental) continue;

  // One route changed per snapshot, in sequence (the caches see what a controller and a proxy see).
  const n = rounds * 2;
  const contents = [];
  let prev = s;
  for (let i = 0; i < n; i++) contents.push((prev = withLastRouteChanged(prev, `-v${i}`)));
  const decoder = new api.SnapshotDecoder();
  decoder.decode(text);
  api.snapshotProblems(s);
  const sum = { hash: 0, check: 0, encode: 0, decode: 0, compile: 0, deltaEncode: 0, deltaDecode: 0, compileReusing: 0, fullBytes: 0, deltaBytes: 0, handRelative: 0, handWhole: 0 };
  const deltas = typeof api.encodeSnapshotDelta === 'function';
  const deltaDecoder = new api.SnapshotDecoder();
  deltaDecoder.decode(text);
  const picking = standalonePickerDeps();
  const limiters = limiterStore();
  let previous = deltas ? compileSnapshot(deltaDecoder.decode(text), { limiters, makeGlobal: null, picking }) : null;
  let base = { version: s.version, positions: deltas ? api.routePositions(s) : null };
  // A worker thread fed relative hand-overs, and one fed whole ones, each with its own compile state.
  const sender = handover && new handover.HandoverSender();
  const worker = handover && { receiver: new handover.HandoverReceiver(), limiters: limiterStore(), previous: null };
  const wholeWorker = handover && { limiters: limiterStore(), previous: null };
  const workerApply = (w, h, receiver) => {
    const { snapshot, applied } = receiver.open(globalThis.structuredClone(h));
    w.previous = compileSnapshot(snapshot, { limiters: w.limiters, makeGlobal: null, picking, previous: w.previous });
    w.limiters.commit();
    applied();
  };
  if (handover && previous) {
    const first = sender.next(previous.ir);
    workerApply(worker, first.whole(), worker.receiver);
    workerApply(wholeWorker, first.whole(), new handover.HandoverReceiver());
  }
  // Payload bytes as protobuf packs them: texts with a tag and length, counts and refs as packed varints.
  const varint = (x) => (x < 128 ? 1 : x < 16384 ? 2 : x < 2097152 ? 3 : 4);
  const field = (len) => 1 + varint(len) + len;
  const packed = (xs) => (xs.length ? field(xs.reduce((n, x) => n + varint(x), 0)) : 0);
  const bytesOf = (parts) =>
    field(Buffer.byteLength(parts.skeleton)) + parts.routes.reduce((n, r) => n + field(Buffer.byteLength(r)), 0) + packed(parts.routeCounts) + packed(parts.base?.refs ?? []) + (parts.base ? field(parts.base.version.length) : 0);
  const clock = clockInto(sum);
  let sent = s;
  for (const content of contents) {
    // As the controller computes it: from the snapshot the Gateway had before.
    const snap = clock('hash', () => withVersion(content, sent));
    sent = snap;
    const problems = clock('check', () => api.snapshotProblems(snap));
    if (problems.length) throw new Error(`bench snapshot refused: ${JSON.stringify(problems)}`);
    // As the stream carries it: the skeleton and each route's text.
    const parts = clock('encode', () => api.encodeSnapshotParts(snap));
    const got = clock('decode', () => decoder.decodeParts(parts));
    clock('compile', () => compileSnapshot(got));
    sum.fullBytes += bytesOf(parts);
    if (!deltas) continue;
    const delta = clock('deltaEncode', () => api.encodeSnapshotDelta(snap, base));
    sum.deltaBytes += bytesOf(delta);
    const fromDelta = clock('deltaDecode', () => deltaDecoder.decodeParts(delta));
    previous = clock('compileReusing', () => compileSnapshot(fromDelta, { limiters, makeGlobal: null, picking, previous }));
    limiters.commit();
    base = { version: snap.version, positions: api.routePositions(snap) };
    if (!handover) continue;
    const out = sender.next(fromDelta);
    clock('handRelative', () => workerApply(worker, out.relative, worker.receiver));
    clock('handWhole', () => workerApply(wholeWorker, out.whole(), new handover.HandoverReceiver()));
  }
  const per = (key) => f(sum[key] / n);
  console.log(
    `${routes} routes, one route changed: controller version hash ${per('hash')}, check ${per('check')}, encode ${per('encode')}; ` +
      `proxy decode+validate ${per('decode')}, compile ${per('compile')} (mean of ${n})`,
  );
  if (deltas) {
    const kib = (key) => `${(sum[key] / n / 1024).toFixed(1)} KiB`;
    console.log(
      `${routes} routes, one route changed, as a delta: ${kib('deltaBytes')} against ${kib('fullBytes')} in full (protobuf payload); ` +
        `encode ${per('deltaEncode')}; proxy decode+validate ${(sum.deltaDecode / n).toFixed(2)} ms, compile reusing the previous ${per('compileReusing')}`,
    );
  }
  if (deltas && handover) {
    console.log(`${routes} routes, one route changed, each further worker thread: handed over relative to the last ${per('handRelative')}, whole ${per('handWhole')} (hand-over, clone, open, compile)`);
  }
  if (deltas) {
    changeSeries(s, text, n, withMiddleRouteInserted, 'a route inserted in the middle');
    changeSeries(s, text, n, (base) => withMiddleRouteRemoved(base), 'a route removed from the middle');
  }
}
