// What the trace terminal UI shows, as pure functions of the events: the type label and
// summary of each row (interface spec §4.3), and the three detail views of the raw-event pane
// (e: the event's JSON, s: the request/response state of a snapshot, d: the diff of that
// state against the previous snapshot of the same kind).
import type { AuthState, RequestState, TraceEvent, TransformationState } from '@tollgate/api';

export type Severity = TraceEvent['severity'];
export type DetailMode = 'event' | 'state' | 'diff';

export const TYPE_LABELS: Record<TraceEvent['message']['type'], string> = {
  requestStarted: 'Request Start',
  requestSnapshot: 'Snapshot',
  routeSelection: 'Route',
  policySelection: 'Policies',
  backendCallStart: 'Backend Start',
  backendCallResult: 'Backend Result',
  extProcPhase: 'extProc',
  responseSnapshot: 'Snapshot',
  requestFinished: 'Request Done',
};

/** Microseconds as `842µs`, `12.3ms` or `1.20s`. */
export function duration(us: number): string {
  if (us < 1000) return `${us}µs`;
  if (us < 1_000_000) return `${(us / 1000).toFixed(1)}ms`;
  return `${(us / 1_000_000).toFixed(2)}s`;
}

/** `consumer team-a; apiKey allow, authorization deny (denied: denied by rule no-gpt4)` */
export function authSummary(auth: AuthState): string {
  const checks = auth.checks.map((c) => (c.result === 'allow' ? `${c.kind} allow` : `${c.kind} deny (${c.reason}${c.note ? `: ${c.note}` : ''})`));
  return [auth.consumer ? `consumer ${auth.consumer.name}` : 'no consumer', checks.join(', ')].filter(Boolean).join('; ');
}

/** `transformation applied (x-team, model)`, or its refusal: `transformation invalid_value (request.headers.set[0].value: ...)` */
export function transformationSummary(t: TransformationState): string {
  if (t.result !== 'applied') return `transformation ${t.result}${t.note ? ` (${t.note})` : ''}`;
  const fields = [...t.headers, ...t.body];
  return `transformation applied${fields.length ? ` (${fields.join(', ')})` : ''}`;
}

/** What the route's checks and transformation did, for the route policies row. */
function routePoliciesSummary(state: RequestState): string | null {
  const parts = [state.auth ? authSummary(state.auth) : '', state.transformation ? transformationSummary(state.transformation) : ''].filter(Boolean);
  return parts.length ? parts.join('; ') : null;
}

export function summary(e: TraceEvent): string {
  const m = e.message;
  switch (m.type) {
    case 'requestStarted':
      return 'request accepted';
    case 'requestSnapshot':
      return m.stage === 'initial request'
        ? `${m.stage}: ${m.requestState.request.method} ${m.requestState.request.host}${m.requestState.request.pathAndQuery}`
        : m.stage === 'final request' && m.requestState.backend
          ? `${m.stage} -> ${m.requestState.backend.name}`
          : m.stage === 'route policies' && routePoliciesSummary(m.requestState)
            ? `${m.stage}: ${routePoliciesSummary(m.requestState)}`
            : m.stage;
    case 'routeSelection':
      return `${m.selectedRoute ?? 'no route matched'} (${m.evaluatedRoutes.length} evaluated)`;
    case 'policySelection': {
      const keys = Object.entries(m.effectivePolicy)
        .filter(([, v]) => v !== null)
        .map(([k]) => k);
      return keys.length ? keys.join(', ') : 'no policies';
    }
    case 'backendCallStart':
      return m.target;
    case 'backendCallResult':
      return `status=${m.status}${m.error ? ` ${m.error.kind}` : ''}${e.eventStart !== null ? ` in ${duration(e.eventEnd - e.eventStart)}` : ''}`;
    case 'extProcPhase':
      return `${m.phase} ${m.result}${m.headers.length ? ` (${m.headers.join(', ')})` : ''}${m.bodyBytes !== null ? ` body ${m.bodyBytes} bytes` : ''}${m.note ? `: ${m.note}` : ''}`;
    case 'responseSnapshot':
      return `${m.stage}: ${m.requestState.response.code}`;
    case 'requestFinished':
      return `after ${duration(e.eventEnd)}`;
  }
}

/** Ink colour of a row of this severity (undefined: the terminal's default). */
export function severityColor(s: Severity): 'yellow' | 'red' | undefined {
  return s === 'error' ? 'red' : s === 'warn' ? 'yellow' : undefined;
}

export interface DetailLine {
  readonly text: string;
  readonly color?: 'green' | 'red' | 'yellow' | 'gray';
}

export interface Detail {
  readonly title: string;
  readonly lines: readonly DetailLine[];
}

const isSnapshot = (e: TraceEvent | undefined) => e?.message.type === 'requestSnapshot' || e?.message.type === 'responseSnapshot';

/** The index of the snapshot at or before `index`, or -1. */
function snapshotAtOrBefore(events: readonly TraceEvent[], index: number): number {
  for (let i = index; i >= 0; i--) if (isSnapshot(events[i])) return i;
  return -1;
}

function stateOf(e: TraceEvent): unknown {
  return e.message.type === 'requestSnapshot' || e.message.type === 'responseSnapshot' ? e.message.requestState : undefined;
}

function stageOf(e: TraceEvent): string {
  return e.message.type === 'requestSnapshot' || e.message.type === 'responseSnapshot' ? e.message.stage : e.message.type;
}

const jsonLines = (v: unknown): DetailLine[] => JSON.stringify(v, null, 2).split('\n').map((text) => ({ text }));

/** `a.b["x-y"]` paths to JSON-encoded leaves. */
export function flatten(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (!entries.length && prefix) out.set(prefix, '{}');
    for (const [k, v] of entries) flatten(v, prefix ? (/^[A-Za-z_$][\w$]*$/.test(k) ? `${prefix}.${k}` : `${prefix}[${JSON.stringify(k)}]`) : k, out);
  } else if (Array.isArray(value)) {
    if (!value.length) out.set(prefix, '[]');
    value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  } else out.set(prefix, JSON.stringify(value));
  return out;
}

/** `+ path: v` added, `- path: v` removed, `~ path: old -> new` changed, in path order. */
export function diffStates(before: unknown, after: unknown): DetailLine[] {
  const a = flatten(before);
  const b = flatten(after);
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  const lines: DetailLine[] = [];
  for (const k of keys) {
    const x = a.get(k);
    const y = b.get(k);
    if (x === y) continue;
    if (x === undefined) lines.push({ text: `+ ${k}: ${y}`, color: 'green' });
    else if (y === undefined) lines.push({ text: `- ${k}: ${x}`, color: 'red' });
    else lines.push({ text: `~ ${k}: ${x} -> ${y}`, color: 'yellow' });
  }
  return lines;
}

export function detail(events: readonly TraceEvent[], index: number, mode: DetailMode): Detail {
  const e = events[index];
  if (!e) return { title: 'No event selected', lines: [] };
  const label = `#${index + 1} ${TYPE_LABELS[e.message.type]}`;
  if (mode === 'event') return { title: `Event JSON of ${label}`, lines: jsonLines(e) };

  const at = snapshotAtOrBefore(events, index);
  if (at < 0) return { title: `${mode === 'state' ? 'State' : 'Diff'}: no snapshot at or before ${label}`, lines: [{ text: 'Select a Snapshot row.', color: 'gray' }] };
  const snap = events[at]!;
  const which = at === index ? `snapshot #${at + 1} (${stageOf(snap)})` : `snapshot #${at + 1} (${stageOf(snap)}), the last before ${label}`;
  if (mode === 'state') return { title: `State of ${which}`, lines: jsonLines(stateOf(snap)) };

  let prev = -1;
  for (let i = at - 1; i >= 0; i--) {
    if (events[i]!.message.type === snap.message.type) {
      prev = i;
      break;
    }
  }
  if (prev < 0) {
    return {
      title: `Diff of ${which}: first ${snap.message.type === 'requestSnapshot' ? 'request' : 'response'} snapshot, all new`,
      lines: diffStates({}, stateOf(snap)),
    };
  }
  const lines = diffStates(stateOf(events[prev]!), stateOf(snap));
  return {
    title: `Diff of ${which} against #${prev + 1} (${stageOf(events[prev]!)})`,
    lines: lines.length ? lines : [{ text: 'No changes.', color: 'gray' }],
  };
}
