// ExtProcConfig to ExtProcIR: the processor's address (through PolicySources, so a cluster
// reaches it by backendRef only), the defaults written out, and the checks the schema cannot
// make (a timeout within its bound, at least one phase sent).
import type { PolicySources } from '../auth/sources.js';
import { parseDuration } from '../duration.js';
import { joinPath, type Problem } from '../validation-error.js';
import { EXT_PROC_BOUNDS, type ExtProcConfig, type ExtProcIR } from './ext-proc.js';

export type { ExtProcIR };

function modesOf(config: ExtProcConfig) {
  const m = config.processingMode ?? {};
  return {
    requestHeaderMode: m.requestHeaderMode ?? 'SEND',
    responseHeaderMode: m.responseHeaderMode ?? 'SEND',
    requestBodyMode: m.requestBodyMode ?? 'NONE',
    responseBodyMode: m.responseBodyMode ?? 'NONE',
  } as const;
}

const timeoutOf = (config: ExtProcConfig): number => (config.messageTimeout === undefined ? EXT_PROC_BOUNDS.defaultTimeoutMs : parseDuration(config.messageTimeout));

/** The checks beyond the schema, for files and for objects the API server did not check. */
export function checkExtProc(config: ExtProcConfig, at: string, problems: Problem[]): void {
  const modes = modesOf(config);
  if (modes.requestHeaderMode === 'SKIP' && modes.responseHeaderMode === 'SKIP' && modes.requestBodyMode === 'NONE' && modes.responseBodyMode === 'NONE') {
    problems.push({ path: joinPath(at, 'processingMode'), message: 'sends nothing to the processor; set a header mode to SEND or a body mode to BUFFERED or STREAMED' });
  }
  const timeoutMs = timeoutOf(config);
  if (timeoutMs > EXT_PROC_BOUNDS.maxTimeoutMs || timeoutMs < 1) {
    problems.push({ path: joinPath(at, 'messageTimeout'), message: `got ${JSON.stringify(config.messageTimeout)}: from 1ms to 60s; the request waits this long for each answer (default 200ms)` });
  }
}

export function toExtProcIR(config: ExtProcConfig, at: string, sources: PolicySources, problems: Problem[]): ExtProcIR | null {
  const before = problems.length;
  const failureMode = config.failureMode ?? 'FailClosed';
  checkExtProc(config, at, problems);
  const modes = modesOf(config);
  const timeoutMs = timeoutOf(config);
  const service = sources.outbound(joinPath(at, 'service'), config.service, 'external processor', failureMode);
  if (!service.ok) problems.push(service.problem);
  if (!service.ok || problems.length > before) return null;
  return {
    service: service.value,
    ...modes,
    maxBufferedBytes: config.maxBufferedBytes ?? EXT_PROC_BOUNDS.defaultBufferedBytes,
    messageTimeoutMs: timeoutMs,
    failureMode,
  };
}
