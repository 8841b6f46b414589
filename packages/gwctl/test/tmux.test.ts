// The trace terminal UI end to end in a real pseudo-terminal: gwctl runs in a tmux pane of
// 80x24 against a real proxy; the test sends keys with `tmux send-keys` and reads the screen
// with `tmux capture-pane`. tmux is required in CI (CI=true); elsewhere the suite is skipped
// with a message saying what to install.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, CHAT_BODY, requireBuild, startProxy, type Proxy } from './helpers.js';
import { tmuxAvailable, tmuxServer } from './tmux-pane.js';

const available = tmuxAvailable();
const tmux = tmuxServer('test');
const startPane = (name: string, args: string[]) => tmux.startPane(name, [process.execPath, BIN, ...args]);

describe.skipIf(!available)('trace terminal UI in tmux (80x24)', () => {
  let proxy: Proxy;
  beforeAll(async () => {
    requireBuild();
    proxy = await startProxy();
  });
  afterAll(async () => {
    tmux.kill();
    await proxy?.close();
  });

  it('inject mode: the table, the e/s/d views, tab and arrows, q prints the response and exits 0', async () => {
    const pane = startPane('inject', ['trace', '--local', '--admin-addr', proxy.adminAddr, '--port', String(proxy.port), '--', 'http://api.example.com/v1/chat/completions', '--json', CHAT_BODY]);
    let screen = await pane.until((s) => s.includes('Traced 12 events; response 200 OK'), 'the traced request');
    const lines = screen.split('\n');
    expect(lines[0]).toMatch(/^gwctl trace 127\.0\.0\.1:\d+ {2}12 events +tab\/↑↓\/←→ e\/s\/d q:quit$/);
    expect(lines[1]).toMatch(/^ # {2}Type +Summary/);
    expect(lines.slice(2, 11).map((l) => l.slice(4, 18).trim())).toEqual(['Route', 'Policies', 'Snapshot', 'Snapshot', 'Backend Start', 'Backend Result', 'Snapshot', 'Snapshot', 'Request Done']);
    expect(lines[2]).toContain('main/chat (1 evaluated)');
    expect(lines[7]).toMatch(/Backend Result {2}status=200 in /);
    expect(lines[11]).toMatch(/^── Event JSON of #12 Request Done {2}\[e event\]/);
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(80);

    pane.keys('Up');
    await pane.until((s) => s.includes('Event JSON of #11 Snapshot'), 'the selection to move up');
    pane.keys('s');
    screen = await pane.until((s) => s.includes('State of snapshot #11 (final response)  [s state]'), 'the state view');
    expect(screen).toContain('"code": 200');
    pane.keys('d');
    screen = await pane.until((s) => s.includes('Diff of snapshot #11 (final response) against #10'), 'the diff view');
    expect(screen).toMatch(/\+ response\.headers\["x-ratelimit-remaining"\]: "\d+"/);
    pane.keys('Up', 'Up', 'Up', 'Up');
    screen = await pane.until((s) => s.includes('Diff of snapshot #7 (final request) against #6 (route policies)'), 'the diff of the final request');
    expect(screen).toContain(`+ backend.name: "127.0.0.1:${proxy.mock.port}"`);
    pane.keys('e', 'Tab', 'Down', 'Down');
    await pane.until((s) => /Event JSON of #7 Snapshot {2}\[e event\] {2}3-12\//.test(s), 'the event pane to scroll');

    pane.keys('q');
    await pane.until(() => pane.exitStatus() !== null, 'gwctl to exit');
    expect(pane.exitStatus()).toBe(0);
    expect(pane.screen()).toContain('"object":"chat.completion"');
  });

  it('watch mode: a status line while waiting, then another client\'s request', async () => {
    const pane = startPane('watch', ['proxy', 'trace', '--local', '--admin-addr', proxy.adminAddr]);
    let screen = await pane.until((s) => s.includes('waiting for the next request from any client'), 'the waiting status line');
    expect(screen.split('\n')[0]).toMatch(/ 0 events /);
    const res = await proxy.send('/v1/models', { headers: { 'x-client': 'curl' } });
    expect(res.status).toBeGreaterThan(0);
    screen = await pane.until((s) => s.includes('Request Done'), 'the traced request');
    expect(screen).toContain('main/models (1 evaluated)');
    pane.keys(...Array<string>(11).fill('Up'));
    screen = await pane.until((s) => s.includes('Event JSON of #1 Request Start'), 'the first row');
    expect(screen).toMatch(/ 2 {2}Snapshot {8}initial request: GET 127\.0\.0\.1:\d+\/v1\/models/);
    pane.keys('q');
    await pane.until(() => pane.exitStatus() !== null, 'gwctl to exit');
    expect(pane.exitStatus()).toBe(0);
  });

  it('Ctrl-C while waiting exits 130 and disarms the session', async () => {
    const pane = startPane('cancel', ['trace', '--local', '--admin-addr', proxy.adminAddr]);
    await pane.until((s) => s.includes('waiting for the next request'), 'the waiting status line');
    pane.keys('C-c');
    await pane.until(() => pane.exitStatus() !== null, 'gwctl to exit');
    expect(pane.exitStatus()).toBe(130);
    const tasks = (await (await fetch(`http://${proxy.adminAddr}/debug/tasks`)).json()) as { traceSessions: unknown[] };
    expect(tasks.traceSessions).toEqual([]);
  });
});
