// A program in a real pseudo-terminal: a tmux pane of 80x24 on a tmux server of its own; keys
// go in with `tmux send-keys`, the screen comes out with `tmux capture-pane`. tmux is required
// in CI (CI=true); elsewhere a suite that needs it is skipped with a message saying what to
// install.
import { execFileSync, spawnSync } from 'node:child_process';

export function tmuxAvailable(): boolean {
  const found = spawnSync('tmux', ['-V'], { encoding: 'utf8' }).status === 0;
  if (found) return true;
  const message = 'tmux is not installed: install it (Debian: apt-get install -y tmux, or run `bash scripts/install-test-tools.sh`) to run the terminal UI test';
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping the tmux suite: ${message}`);
  return false;
}

export interface Pane {
  readonly name: string;
  screen(): string;
  keys(...keys: string[]): void;
  /** Polls the screen (the pane's own event) until `ok` holds; fails with the last screen. */
  until(ok: (screen: string) => boolean, what: string): Promise<string>;
  /** The program's exit status once it has exited, else null. */
  exitStatus(): number | null;
}

export interface Tmux {
  /** Runs `command` (argv) in a new 80x24 pane named `name`. */
  startPane(name: string, command: readonly string[]): Pane;
  kill(): void;
}

export function tmuxServer(label: string): Tmux {
  const socket = `gwctl-${label}-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  return {
    startPane(name, command) {
      // A shell prints the program's exit status (tmux does not always record a pane's), and
      // the pane stays after it exits so its last screen can be read.
      tmux('new-session', '-d', '-s', name, '-x', '80', '-y', '24', 'sh', '-c', '"$0" "$@"; echo "gwctl-exit=$?"', ...command);
      tmux('set-option', '-t', name, 'remain-on-exit', 'on');
      const pane: Pane = {
        name,
        screen: () => tmux('capture-pane', '-p', '-t', name),
        keys: (...keys) => void tmux('send-keys', '-t', name, ...keys),
        until: async (ok, what) => {
          const deadline = Date.now() + 15_000;
          let screen = pane.screen();
          while (!ok(screen)) {
            if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the screen:\n${screen}`);
            await new Promise((r) => setTimeout(r, 25));
            screen = pane.screen();
          }
          return screen;
        },
        exitStatus: () => {
          const m = /gwctl-exit=(\d+)/.exec(pane.screen());
          return m ? Number(m[1]) : null;
        },
      };
      return pane;
    },
    kill() {
      spawnSync('tmux', ['-L', socket, 'kill-server']);
    },
  };
}
