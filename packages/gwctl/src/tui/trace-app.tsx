// The trace terminal UI (interface spec §4.3): an events table (#, Type, Summary) over a
// raw-event pane. tab switches the focused pane, arrows move the selection or scroll the
// pane, e/s/d choose what the pane shows, q quits. Rows are coloured by severity. Laid out
// to the terminal's size and usable at 80x24.
import { Box, Text, useApp, useInput, useStdout } from 'ink';
import { useEffect, useRef, useState, useSyncExternalStore, type ReactElement } from 'react';
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

export function TraceApp({ store, title, onExit, columns, rows }: TraceAppProps): ReactElement {
  const view = useSyncExternalStore(store.subscribe, store.get);
  const size = useTerminalSize(columns, rows);
  const { exit } = useApp();
  const [focus, setFocus] = useState<'table' | 'detail'>('table');
  // Keys can arrive faster than renders: the handler reads the focus from a ref.
  const focusRef = useRef<'table' | 'detail'>('table');
  const [selected, setSelected] = useState<number | null>(null); // null: follow the newest event
  const [mode, setMode] = useState<DetailMode>('event');
  const [scroll, setScroll] = useState({ y: 0, x: 0 });

  const events = view.events;
  const sel = events.length ? Math.min(selected ?? events.length - 1, events.length - 1) : -1;

  // One blank line below the frame keeps Ink from treating it as full-screen output.
  const width = Math.max(40, size.columns);
  const height = Math.max(12, size.rows) - 1;
  const tableRows = Math.max(3, Math.floor((height - 4) / 2));
  const detailRows = height - tableRows - 4;

  const shown = sel >= 0 ? detail(events, sel, mode) : { title: 'Raw event', lines: [] };
  const maxY = Math.max(0, shown.lines.length - detailRows);

  // Keys may arrive before the next render, or reach a handler of an earlier render: the
  // handler reads the sizes of the latest render from a ref and updates state functionally.
  const latest = useRef({ count: 0, maxY: 0, tableRows, detailRows });
  latest.current = { count: events.length, maxY, tableRows, detailRows };
  const moveSelection = (delta: number) => {
    const n = latest.current.count;
    if (!n) return;
    setSelected((prev) => Math.max(0, Math.min(n - 1, Math.min(prev ?? n - 1, n - 1) + delta)));
    setScroll({ y: 0, x: 0 });
  };
  const scrollBy = (dy: number, dx = 0) => setScroll((s) => ({ y: Math.max(0, Math.min(latest.current.maxY, s.y + dy)), x: Math.max(0, s.x + dx) }));

  useInput((input, key) => {
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
    if (key.tab) {
      focusRef.current = focusRef.current === 'table' ? 'detail' : 'table';
      return setFocus(focusRef.current);
    }
    const m = MODE_KEYS[input];
    if (m) {
      setMode(m);
      setScroll({ y: 0, x: 0 });
      return;
    }
    const pane = focusRef.current;
    const page = pane === 'table' ? latest.current.tableRows : latest.current.detailRows;
    const delta = key.upArrow || input === 'k' ? -1 : key.downArrow || input === 'j' ? 1 : key.pageUp ? -page : key.pageDown ? page : 0;
    if (pane === 'table') {
      if (delta) moveSelection(delta);
    } else {
      if (delta) scrollBy(delta);
      if (key.leftArrow) scrollBy(0, -8);
      if (key.rightArrow) scrollBy(0, 8);
    }
  });

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
  const keys = 'tab:pane ↑↓:move ←→:pan e/s/d:view q:quit';
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
