// Retries and failover in the standalone config: the shape, the bounds and their messages, and
// the IR with the defaults applied; the GatewayPolicy's failover and its priorityOf().
import { describe, expect, it } from 'vitest';
import { compile, GatewayPolicySpec, priorityOf, standaloneToSnapshot, validateStandaloneConfig, type FailoverPolicy } from '../src/index.js';
import { cfg, problems, route } from './support.js';

const at = 'binds[0].listeners[0].routes[0]';

describe('a route\'s retry and its backends\' priorities', () => {
  it('reach the IR with the defaults applied: codes sorted, attempts 1, backoff 25ms; a priority only when not 0', () => {
    const config = cfg([
      route({ retry: { codes: [503, 500] }, backends: [{ host: '127.0.0.1:9000' }, { host: '127.0.0.1:9001', priority: 1 }, { host: '127.0.0.1:9002', priority: 0 }] }),
      route({ name: 'plain' }),
    ]);
    const ir = standaloneToSnapshot(validateStandaloneConfig(config), { kind: 'file', path: '/x' });
    const [r, plain] = ir.binds[0]!.listeners[0]!.routes;
    expect(r!.retry).toEqual({ codes: [500, 503], attempts: 1, backoffMs: 25 });
    expect(r!.backends.map((b) => b.priority)).toEqual([undefined, 1, undefined]);
    // A route without retry has none in the IR: its snapshot (and version) is as before.
    expect('retry' in plain!).toBe(false);
  });

  it('refuses values out of their bounds, naming the field', () => {
    expect(problems(cfg([route({ retry: { attempts: 11 } })]))).toEqual([`${at}.retry.attempts: got 11; expected a number <= 10`]);
    expect(problems(cfg([route({ retry: { codes: [200] } })]))).toEqual([`${at}.retry.codes[0]: got 200; expected a number >= 400`]);
    expect(problems(cfg([route({ retry: { codes: [500, 500] } })]))[0]).toMatch(/^binds\[0\]\.listeners\[0\]\.routes\[0\]\.retry\.codes: .*duplicate/);
    expect(problems(cfg([route({ retry: { backoff: 'soon' } })]))[0]).toMatch(/^binds\[0\]\.listeners\[0\]\.routes\[0\]\.retry\.backoff: /);
    expect(problems(cfg([route({ retry: { tries: 2 } })]))[0]).toMatch(/retry\.tries: unknown field; expected one of: codes, attempts, backoff/);
    expect(problems(cfg([route({ backends: [{ host: '127.0.0.1:9000', priority: 101 }] })]))).toEqual([`${at}.backends[0].priority: got 101; expected a number <= 100`]);
  });

  it('checks the settings against each other: a retry body the budget could never hold, a cool-down longer than its maximum', () => {
    expect(problems(cfg([route()], {}, { config: { maxRetryBodyBytes: 100_000_000 } }))).toEqual([
      'config.maxRetryBodyBytes: got 100000000; it must not be more than maxBufferedRequestBytes (67108864), or a body of that size could never be held: lower it or raise maxBufferedRequestBytes',
    ]);
    expect(problems(cfg([route()], {}, { config: { coolDown: '10m', maxCoolDown: '1m' } }))).toEqual(['config.coolDown: got 10m; it must not be more than maxCoolDown (1m)']);
    expect(problems(cfg([route()], {}, { config: { coolDown: '10m' } }))).toEqual(['config.coolDown: got 10m; it must not be more than maxCoolDown (300s)']);
    expect(problems(cfg([route()], {}, { config: { retryBudgetPercent: 101 } }))).toEqual(['config.retryBudgetPercent: got 101; expected a number <= 100']);
    expect(problems(cfg([route()], {}, { config: { retryBudgetPercent: 0, retryBudgetMinConcurrency: 0, maxRetryBodyBytes: 0, coolDown: '0s' } }))).toEqual([]);
  });
});

describe('GatewayPolicy failover', () => {
  const validate = compile(GatewayPolicySpec);
  const targetRefs = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }];

  it('validates its entries, naming the field', () => {
    expect(validate({ targetRefs, failover: { priorities: [] } }).ok).toBe(false);
    const r = validate({ targetRefs, failover: { priorities: [{ backendRef: { name: 'Bad_Name' }, priority: 1 }] } });
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['failover.priorities[0].backendRef.name']);
  });

  it('gives a backendRef the priority of the first entry naming its referent (a Service by default, the route\'s namespace, any port unless given); 0 otherwise', () => {
    const policy: FailoverPolicy = {
      priorities: [
        { backendRef: { name: 'llm', port: 8080 }, priority: 2 },
        { backendRef: { group: 'tollgate.dev', kind: 'Backend', name: 'anthropic' }, priority: 1 },
        { backendRef: { name: 'llm' }, priority: 3 },
        { backendRef: { name: 'shared', namespace: 'providers' }, priority: 4 },
      ],
    };
    expect(priorityOf(policy, 'team', { name: 'llm', port: 8080 })).toBe(2);
    expect(priorityOf(policy, 'team', { name: 'llm', port: 9090 })).toBe(3);
    expect(priorityOf(policy, 'team', { group: 'tollgate.dev', kind: 'Backend', name: 'anthropic' })).toBe(1);
    // A Service of the same name is another referent.
    expect(priorityOf(policy, 'team', { name: 'anthropic' })).toBe(0);
    expect(priorityOf(policy, 'team', { name: 'shared', namespace: 'providers' })).toBe(4);
    expect(priorityOf(policy, 'team', { name: 'shared' })).toBe(0);
    expect(priorityOf(undefined, 'team', { name: 'llm' })).toBe(0);
  });
});
