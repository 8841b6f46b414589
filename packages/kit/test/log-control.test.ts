// LogControl: a child logger per component with its own level, directive changes, the
// controller's per-component setters, and redaction from the shared list (headers in any
// header map, credential query parameters under URL keys).
import { LogSink } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { DirectiveError, LogControl } from '../src/index.js';

const COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;

function control(directive = 'info') {
  const sink = new LogSink();
  const logs = new LogControl({ components: COMPONENTS, directive, destination: sink, componentKey: 'component' });
  return { sink, logs };
}

describe('LogControl', () => {
  it('gives each component its own level from the directive, and names it on each line', () => {
    const { sink, logs } = control('warn,tollgate/syncer=debug');
    expect(logs.levels()).toEqual({ 'tollgate/syncer': 'debug', 'tollgate/translator': 'warn', 'gateway-controller': 'warn', deployer: 'warn', default: 'warn' });
    logs.get('tollgate/syncer').debug('synced');
    logs.get('deployer').info('hidden');
    logs.get('deployer').warn('shown');
    expect(sink.lines.map((l) => [l.component, l.msg])).toEqual([
      ['tollgate/syncer', 'synced'],
      ['deployer', 'shown'],
    ]);
  });

  it('sets all, one, a directive, and resets to the start-up directive', () => {
    const { logs } = control('info,deployer=trace');
    logs.setOne('default', 'error');
    expect(logs.levelOf('default')).toBe('error');
    expect(logs.get('default').level).toBe('error');
    logs.setAll('debug');
    expect(new Set(Object.values(logs.levels()))).toEqual(new Set(['debug']));
    expect(logs.set('warn,gateway-controller=info')).toBe('warn,gateway-controller=info');
    expect(logs.reset()).toBe('info,deployer=trace');
    expect(() => logs.set('info,nosuch=debug')).toThrow(DirectiveError);
    expect(() => new LogControl({ components: COMPONENTS, directive: 'loud' })).toThrow(/"loud" is not a level/);
  });

  it('redacts every header of the shared list wherever a header map is logged, and credential query values', () => {
    const { sink, logs } = control();
    const headers = { authorization: 'Bearer s1', 'x-goog-api-key': 's2', 'x-amz-security-token': 's3', 'proxy-authorization': 's4', 'ocp-apim-subscription-key': 's5', 'x-plain': 'visible' };
    logs.get('default').info({ headers, req: { headers }, url: '/v1/x?api_key=s6&model=gpt&Token=s7' }, 'request');
    const line = JSON.stringify(sink.lines[0]);
    for (const s of ['s1', 's2', 's3', 's4', 's5', 's6', 's7']) expect(line).not.toContain(`"${s}"`);
    expect(sink.lines[0]).toMatchObject({
      headers: { authorization: '[redacted]', 'x-goog-api-key': '[redacted]', 'x-plain': 'visible' },
      req: { headers: { 'x-amz-security-token': '[redacted]', 'x-plain': 'visible' } },
      url: '/v1/x?api_key=[redacted]&model=gpt&Token=[redacted]',
    });
  });
});
