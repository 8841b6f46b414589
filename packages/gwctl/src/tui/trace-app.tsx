// The trace terminal UI (interface spec §4.3): an events table (#, Type, Summary) over a
// raw-event pane. tab switches the focused pane, arrows move the selection or scroll the
// pane, e/s/d choose what the pane shows, q quits. Rows are coloured by severity. Laid out
// to the terminal's size and usable at 80x24.
import { Box, Text, useApp, useInput, useStdout, type Key } from 'ink';
import { useEffect, useReducer, useRef, useState, useSyncExternalStore, type ReactElement } from 'react';
import type { TraceEvent } from '@tollgate/api';
import { detail, severityColor, summary, TYPE_LABELS, type DetailMode } from './format.js';
import type { TraceStore } from './store.js';

export type ExitReason = 'quit' | 'interrupt';

export interface TraceAppProps {
  readonly store: TraceStore;
  /** Shown in the header, e.g. `gateway/public` or `127.0.0.1:15000`. */
  readonly title: string;
  readonly onExit: (reason: ExitReason) => void;
  /** Size overrides (tests); default: the terminal's. */
  readonly columns?: number;
  readonly rows?: number;
}

const MODE_KEYS: Record<string, DetailMode> = { e: 'event', s: 'state', d: 'diff' };
const MODE_NAMES: Record<DetailMode, string> = { event: 'e event', state: 's state', diff: 'd diff' };

function clip(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

function useTerminalSize(columns?: number, rows?: number): { columns: number; rows: number } {
  const { stdout } = useStdout();
  const read = () => ({ columns: columns ?? (stdout.columns || 80), rows: rows ?? (stdout.rows || 24) });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  });
  return size;
}

interface UiState {
  readonly focus: 'table' | 'detail';
  /** null: follow the newest event. */
  readonly selected: number | null;
  readonly mode: DetailMode;
  readonly y: number;
  readonly x: number;
}

type UiAction =
  | { readonly kind: 'tab' }
  | { readonly kind: 'mode'; readonly mode: DetailMode }
  | { readonly kind: 'arrow'; readonly dy: number; readonly dx: number; readonly page: boolean };

interface Layout {
  readonly events: readonly TraceEvent[];
  readonly tableRows: number;
  readonly detailRows: number;
}

/**
 * Keys are reduced in order against the latest state, so keys that arrive together (typed
 * fast, pasted, sent by tmux) act exactly as if typed one by one.
 */
export function reduceKey(state: UiState, action: UiAction, layout: Layout): UiState {
  const n = layout.events.length;
  switch (action.kind) {
    case 'tab':
      return { ...state, focus: state.focus === 'table' ? 'detail' : 'table' };
    case 'mode':
      return { ...state, mode: action.mode, y: 0, x: 0 };
    case 'arrow': {
      if (!n) return state;
      const sel = Math.min(state.selected ?? n - 1, n - 1);
      if (state.focus === 'table') {
        const dy = action.page ? action.dy * layout.tableRows : action.dy;
        if (!dy) return state;
        return { ...state, selected: Math.max(0, Math.min(n - 1, sel + dy)), y: 0, x: 0 };
      }
      const maxY = Math.max(0, detail(layout.events, sel, state.mode).lines.length - layout.detailRows);
      const dy = action.page ? action.dy * layout.detailRows : action.dy;
      return { ...state, y: Math.max(0, Math.min(maxY, state.y + dy)), x: Math.max(0, state.x + action.dx) };
    }
  }
}

export function TraceApp({ store, title, onExit, columns, rows }: TraceAppProps): ReactElement {
  const view = useSyncExternalStore(store.subscribe, store.get);
  const size = useTerminalSize(columns, rows);
  const { exit } = useApp();

  const events = view.events;
  // One blank line below the frame keeps Ink from treating it as full-screen output.
  const width = Math.max(40, size.columns);
  const height = Math.max(12, size.rows) - 1;
  const tableRows = Math.max(3, Math.floor((height - 4) / 2));
  const detailRows = height - tableRows - 4;

  // The reducer reads the layout of the latest render (events arrive from outside React).
  const layout = useRef<Layout>({ events, tableRows, detailRows });
  layout.current = { events, tableRows, detailRows };
  const [ui, dispatch] = useReducer((s: UiState, a: UiAction) => reduceKey(s, a, layout.current), { focus: 'table', selected: null, mode: 'event', y: 0, x: 0 });
  const { focus, mode } = ui;
  const sel = events.length ? Math.min(ui.selected ?? events.length - 1, events.length - 1) : -1;
  const shown = sel >= 0 ? detail(events, sel, mode) : { title: 'Raw event', lines: [] };
  const scroll = { y: Math.min(ui.y, Math.max(0, shown.lines.length - detailRows)), x: ui.x };

  const onKey = (input: string, key: Key): void => {
    // Characters typed faster than they are read arrive as one string: one key each.
    if (input.length > 1 && !key.ctrl && !key.meta) {
      for (const ch of input) onKey(ch, { ...key, tab: ch === '\t' });
      return;
    }
    if (key.ctrl && input === 'c') {
      onExit('interrupt');
      exit();
      return;
    }
    if (input === 'q') {
      onExit('quit');
      exit();
      return;
    }
    if (key.tab) return dispatch({ kind: 'tab' });
    const m = MODE_KEYS[input];
    if (m) return dispatch({ kind: 'mode', mode: m });
    const dy = key.upArrow || input === 'k' || key.pageUp ? -1 : key.downArrow || input === 'j' || key.pageDown ? 1 : 0;
    const dx = key.leftArrow ? -8 : key.rightArrow ? 8 : 0;
    if (dy || dx) dispatch({ kind: 'arrow', dy, dx, page: key.pageUp || key.pageDown });
  };
  useInput(onKey);

  // The table window moves only as far as needed to keep the selected row visible.
  const top = useRef(0);
  if (sel >= 0 && sel < top.current) top.current = sel;
  if (sel >= top.current + tableRows) top.current = sel - tableRows + 1;
  top.current = Math.max(0, Math.min(top.current, events.length - tableRows));
  const windowStart = top.current;
  const visible = events.slice(windowStart, windowStart + tableRows);
  const numWidth = Math.max(2, String(events.length).length);
  const row = (n: string, type: string, text: string) => clip(`${n.padStart(numWidth)}  ${type.padEnd(14)}  ${text}`, width);
  const focusColor = (pane: 'table' | 'detail') => (focus === pane ? 'cyan' : 'gray');

  const header = `gwctl trace ${title}  ${events.length} event${events.length === 1 ? '' : 's'}`;
  const statusColor = view.phase === 'failed' ? 'red' : view.phase === 'done' ? 'green' : 'yellow';
  const keys = 'tab/↑↓/←→ e/s/d q:quit';
  const headerLine = header.length + keys.length + 2 <= width ? `${header}${' '.repeat(width - header.length - keys.length)}${keys}` : header;
  const detailTitle = `${shown.title}  [${MODE_NAMES[mode]}]${shown.lines.length > detailRows ? `  ${scroll.y + 1}-${Math.min(shown.lines.length, scroll.y + detailRows)}/${shown.lines.length}` : ''}`;

  return (
    <Box flexDirection="column" width={width}>
      <Text bold wrap="truncate">
        {clip(headerLine, width)}
      </Text>
      <Text bold color={focusColor('table')} wrap="truncate">
        {row('#', 'Type', 'Summary')}
      </Text>
      {Array.from({ length: tableRows }, (_, i) => {
        const e = visible[i];
        if (!e) return <Text key={`t${i}`}> </Text>;
        const index = windowStart + i;
        return (
          <Text key={`t${i}`} color={severityColor(e.severity)} inverse={index === sel} wrap="truncate">
            {row(String(index + 1), TYPE_LABELS[e.message.type], summary(e))}
          </Text>
        );
      })}
      <Text bold color={focusColor('detail')} wrap="truncate">
        {clip(`── ${detailTitle} `.padEnd(width, '─'), width)}
      </Text>
      {Array.from({ length: detailRows }, (_, i) => {
        const line = shown.lines[scroll.y + i];
        if (!line) return <Text key={`d${i}`}> </Text>;
        return (
          <Text key={`d${i}`} color={line.color} wrap="truncate">
            {clip([...line.text].slice(scroll.x).join('') || ' ', width)}
          </Text>
        );
      })}
      <Text color={statusColor} wrap="truncate">
        {clip(view.status, width)}
      </Text>
    </Box>
  );
}
