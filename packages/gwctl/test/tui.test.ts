// The trace terminal UI as components (ink-testing-library): the waiting status line, rows
// with the spec's type labels and summaries, severity colours, an 80x24 frame, and the keys
// (arrows, tab, e/s/d, q). The same UI runs in a real terminal in tmux.test.ts.
import { compile, TraceEvent } from '@tollgate/api';
import { createElement } from 'react';
import { describe, expect, it } from 'vitest';
import { detail, diffStates, summary, transformationSummary, TYPE_LABELS } from '../src/tui/format.js';
import { TraceStore } from '../src/tui/store.js';
import type { ExitReason } from '../src/tui/trace-app.js';
import { authDeniedTrace, okTrace, refusedTrace } from './fixtures.js';

// Colours are part of what is tested: make chalk emit them before Ink loads it.
process.env.FORCE_COLOR = '1';
const { render } = await import('ink-testing-library');
const { TraceApp } = await import('../src/tui/trace-app.js');

const ESC = '\u001B';
const KEYS = { up: `${ESC}[A`, down: `${ESC}[B`, right: `${ESC}[C`, tab: '\t' };
// eslint-disable-next-line no-control-regex
const plain = (s: string | undefined) => (s ?? '').replace(/\u001B\[[0-9;]*m/g, '');

function mount(store: TraceStore, size = { columns: 80, rows: 24 }) {
  const exits: ExitReason[] = [];
  const app = render(createElement(TraceApp, { store, title: 'gateway/public', onExit: (r) => exits.push(r), ...size }));
  const frame = () => plain(app.lastFrame());
  /** Yields to the event loop until the frame satisfies `ok` (Ink renders asynchronously). */
  const until = async (ok: (f: string) => boolean) => {
    for (let i = 0; i < 200 && !ok(frame()); i++) await new Promise((r) => setImmediate(r));
    expect(ok(frame()), frame()).toBe(true);
  };
  const press = async (key: string, ok: (f: string) => boolean) => {
    app.stdin.write(key);
    await until(ok);
  };
  return { app, frame, until, press, exits };
}

describe('fixtures', () => {
  it('are valid trace events', () => {
    const v = compile(TraceEvent);
    for (const e of [...okTrace(), ...refusedTrace(), ...authDeniedTrace()]) expect(v(e).ok, JSON.stringify(e)).toBe(true);
  });
});

describe('format', () => {
  it('labels and summaries of the spec', () => {
    const rows = okTrace().map((e) => `${TYPE_LABELS[e.message.type]} | ${summary(e)}`);
    expect(rows).toEqual([
      'Request Start | request accepted',
      'Snapshot | initial request: POST api.example.com/v1/chat/completions',
      'Snapshot | gateway policies',
      'Route | main/chat (2 evaluated)',
      'Policies | localRateLimit, requestHeaderModifier',
      'Snapshot | route policies',
      'Snapshot | final request -> 127.0.0.1:9000',
      'Backend Start | 127.0.0.1:9000',
      'Backend Result | status=200 in 8.4ms',
      'Snapshot | backend response ready: 200',
      'Snapshot | final response: 200',
      'Request Done | after 9.1ms',
    ]);
    expect(summary(refusedTrace()[8]!)).toBe('status=503 TG_UPSTREAM_REFUSED in 460µs');
  });

  it('the route policies snapshot of a route with checks: the consumer and what each check decided', () => {
    const rows = authDeniedTrace().map((e) => `${TYPE_LABELS[e.message.type]} | ${summary(e)}`);
    expect(rows.slice(4)).toEqual([
      'Policies | authorization, apiKey',
      'Snapshot | route policies: consumer alice; apiKey allow, authorization deny (denied: denied by rule no-large-models)',
      'Snapshot | final response: 403',
      'Request Done | after 160µs',
    ]);
  });

  it('the route policies snapshot of a route with a transformation: what it edited, or why it refused', () => {
    const applied = { source: 'route' as const, result: 'applied' as const, headers: ['x-team'], body: ['model', 'max_tokens'], skipped: [], note: null };
    expect(transformationSummary(applied)).toBe('transformation applied (x-team, model, max_tokens)');
    expect(transformationSummary({ ...applied, result: 'invalid_value', note: 'request.headers.set[0].value: the value has U+000D at index 3' })).toBe(
      'transformation invalid_value (request.headers.set[0].value: the value has U+000D at index 3)',
    );
    const [, , , , , routePolicies] = authDeniedTrace();
    const m = routePolicies!.message as Extract<TraceEvent['message'], { type: 'requestSnapshot' }>;
    const both = { ...routePolicies!, message: { ...m, requestState: { ...m.requestState, transformation: applied } } };
    expect(summary(both)).toBe('route policies: consumer alice; apiKey allow, authorization deny (denied: denied by rule no-large-models); transformation applied (x-team, model, max_tokens)');
  });

  it('diff: added, removed and changed paths', () => {
    expect(diffStates({ a: { b: 1, 'x-y': 'k' }, gone: true }, { a: { b: 2, 'x-y': 'k', c: [1] } }).map((l) => `${l.color}:${l.text}`)).toEqual([
      'yellow:~ a.b: 1 -> 2',
      'green:+ a.c[0]: 1',
      'red:- gone: true',
    ]);
  });

  it('state and diff of a non-snapshot row use the snapshot before it', () => {
    const events = okTrace();
    expect(detail(events, 7, 'state').title).toBe('State of snapshot #7 (final request), the last before #8 Backend Start');
    expect(detail(events, 0, 'state').title).toBe('State: no snapshot at or before #1 Request Start');
    const first = detail(events, 9, 'diff');
    expect(first.title).toBe('Diff of snapshot #10 (backend response ready): first response snapshot, all new');
    expect(detail(events, 2, 'diff').lines).toEqual([{ text: 'No changes.', color: 'gray' }]);
  });
});

describe('TraceApp', () => {
  it('shows the status line while waiting, then the rows as events arrive, within 80x24', async () => {
    const store = new TraceStore({ phase: 'waiting', status: 'Trace armed on pod edge/public-7d9f; waiting for the next request from any client…' });
    const ui = mount(store);
    await ui.until((f) => f.includes('waiting for the next request'));
    expect(ui.frame()).toMatch(/^gwctl trace gateway\/public {2}0 events +tab\/↑↓/);
    expect(ui.frame()).toContain(' #  Type            Summary');
    for (const e of okTrace()) store.push(e);
    store.update({ status: 'Traced 12 events; response 200 OK' });
    await ui.until((f) => f.includes('Traced 12 events'));
    const lines = ui.frame().split('\n');
    expect(lines.length).toBeLessThanOrEqual(23);
    for (const l of lines) expect([...l].length, l).toBeLessThanOrEqual(80);
    // 9 table rows at 24 lines: the newest events are shown and selected.
    expect(lines.slice(2, 11).map((l) => l.trimEnd())).toEqual([
      ' 4  Route           main/chat (2 evaluated)',
      ' 5  Policies        localRateLimit, requestHeaderModifier',
      ' 6  Snapshot        route policies',
      ' 7  Snapshot        final request -> 127.0.0.1:9000',
      ' 8  Backend Start   127.0.0.1:9000',
      ' 9  Backend Result  status=200 in 8.4ms',
      '10  Snapshot        backend response ready: 200',
      '11  Snapshot        final response: 200',
      '12  Request Done    after 9.1ms',
    ]);
    expect(lines[11]).toMatch(/^── Event JSON of #12 Request Done {2}\[e event\]/);
    expect(lines[12]).toBe('{');
    ui.app.unmount();
  });

  it('colours rows by severity and marks the selected row', async () => {
    const store = new TraceStore({ phase: 'done', events: refusedTrace(), status: 'done' });
    const ui = mount(store);
    await ui.until((f) => f.includes('Request Done'));
    const raw = ui.app.lastFrame() ?? '';
    const row = (text: string) => raw.split('\n').find((l) => plain(l).includes(text)) ?? '';
    expect(row('status=503')).toContain(`${ESC}[31m`); // red: error
    expect(row('final response: 503')).toContain(`${ESC}[31m`);
    expect(row('Backend Start')).not.toContain(`${ESC}[31m`);
    expect(row('Request Done')).toContain(`${ESC}[7m`); // inverse: selected
    ui.app.unmount();
  });

  it('arrows move the selection, s shows the state, d the diff, tab and arrows scroll the pane, q quits', async () => {
    const store = new TraceStore({ phase: 'done', events: okTrace(), status: 'Traced 12 events' });
    const ui = mount(store);
    await ui.until((f) => f.includes('Event JSON of #12'));
    await ui.press(KEYS.up, (f) => f.includes('Event JSON of #11 Snapshot'));
    await ui.press('s', (f) => f.includes('State of snapshot #11 (final response)  [s state]'));
    expect(ui.frame()).toContain('"x-ratelimit-remaining": "4983"');
    await ui.press('d', (f) => f.includes('Diff of snapshot #11 (final response) against #10 (backend response ready)'));
    expect(ui.frame()).toContain('+ response.headers["x-ratelimit-remaining"]: "4983"');
    // Several keys in one read: each moves one row.
    await ui.press(KEYS.up + KEYS.up + KEYS.up + KEYS.up, (f) => f.includes('Diff of snapshot #7 (final request) against #6 (route policies)'));
    expect(ui.frame()).toContain('+ backend.name: "127.0.0.1:9000"');
    await ui.press('e', (f) => f.includes('Event JSON of #7 Snapshot'));
    expect(ui.frame()).toMatch(/Event JSON of #7 Snapshot {2}\[e event\] {2}1-10\/\d+/);
    // tab: the arrows scroll the pane (down, and right by 8 columns) instead of moving rows.
    await ui.press(KEYS.tab + KEYS.down + KEYS.down, (f) => /Event JSON of #7 Snapshot {2}\[e event\] {2}3-12\/\d+/.test(f));
    expect(ui.frame().split('\n')[12]).toBe('  "eventEnd": 130,');
    await ui.press(KEYS.right, (f) => f.split('\n')[12] === 'End": 130,');
    await ui.press(KEYS.tab + KEYS.up, (f) => f.includes('Event JSON of #6 Snapshot  [e event]  1-10'));
    // Above the first visible row the table scrolls.
    await ui.press(KEYS.up + KEYS.up + KEYS.up + KEYS.up + KEYS.up + KEYS.up, (f) => f.includes('Event JSON of #1 Request Start'));
    expect(ui.frame().split('\n')[2]).toMatch(/^ 1 {2}Request Start/);
    await ui.press('q', () => ui.exits.length > 0);
    expect(ui.exits).toEqual(['quit']);
  });

  it('Ctrl-C exits with the interrupt reason', async () => {
    const ui = mount(new TraceStore({ phase: 'waiting', status: 'waiting' }));
    await ui.until((f) => f.includes('waiting'));
    await ui.press('\u0003', () => ui.exits.length > 0);
    expect(ui.exits).toEqual(['interrupt']);
  });
});
