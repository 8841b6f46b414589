// The extProc kind in a standalone config: accepted with its defaults written out, and every
// malformed field refused with its path and what to write instead.
import { describe, expect, it } from 'vitest';
import { standaloneToSnapshot, validateStandaloneConfig } from '../src/index.js';
import { cfg, problems, route } from './support.js';

const AT = 'binds[0].listeners[0].routes[0].policies.traffic.extProc';
const withExtProc = (extProc: Record<string, unknown>) => cfg([route({ policies: { traffic: { extProc } } })]);
const SERVICE = { host: '127.0.0.1:9002' };

describe('extProc in a standalone config', () => {
  it('is accepted with its defaults written out', () => {
    const config = withExtProc({ service: SERVICE, processingMode: { responseBodyMode: 'STREAMED' } });
    expect(problems(config)).toEqual([]);
    const snapshot = standaloneToSnapshot(validateStandaloneConfig(config), { kind: 'file', path: '/c.yaml' });
    expect(snapshot.binds[0]!.listeners[0]!.routes[0]!.policy?.extProc).toEqual({
      service: '127.0.0.1:9002',
      requestHeaderMode: 'SEND',
      responseHeaderMode: 'SEND',
      requestBodyMode: 'NONE',
      responseBodyMode: 'STREAMED',
      maxBufferedBytes: 1048576,
      messageTimeoutMs: 200,
      failureMode: 'FailClosed',
    });
  });

  it.each([
    [{ service: SERVICE, messageTimeout: '2m' }, `${AT}.messageTimeout: got "2m": from 1ms to 60s`],
    [{ service: SERVICE, processingMode: { requestHeaderMode: 'SKIP', responseHeaderMode: 'SKIP' } }, `${AT}.processingMode: sends nothing to the processor`],
    [{ service: SERVICE, processingMode: { requestBodyMode: 'BUFFERD' } }, `${AT}.processingMode.requestBodyMode: got "BUFFERD"`],
    [{ service: SERVICE, maxBufferedBytes: 0 }, `${AT}.maxBufferedBytes: got 0`],
    [{ service: SERVICE, maxBufferedBytes: 64 * 1024 * 1024 }, `${AT}.maxBufferedBytes: got 67108864`],
    [{ service: SERVICE, failureMode: 'Open' }, `${AT}.failureMode: got "Open"`],
    [{ service: SERVICE, mode: 'x' }, `${AT}.mode: unknown field`],
    [{ service: { backendRef: { name: "p", port: 9002 } } }, `${AT}.service.backendRef: is not available in a standalone config`],
    [{}, `${AT}.service`],
  ])('refuses %j naming the field', (extProc, message) => {
    const out = problems(withExtProc(extProc));
    expect(out.some((p) => p.startsWith(message)), out.join('\n')).toBe(true);
  });
});
