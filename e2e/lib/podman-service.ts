// podman's Docker-compatible API for testcontainers: `podman system service` on a socket in a
// throwaway directory, with the project's containers.conf (images/podman-env.sh: runc, the
// sandbox's ulimits, the 198.18.200.0/24 network, no pulls). testcontainers reads DOCKER_HOST;
// its reaper container is disabled (its image cannot be pulled here), so every suite removes
// its containers itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { podmanEnv, podmanImageId } from './node/images.js';

export interface PodmanService {
  socket: string;
  stop(): Promise<void>;
}

export async function startPodmanService(): Promise<PodmanService> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-podman-'));
  const socket = join(dir, 'podman.sock');
  const child: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { env: podmanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const deadline = Date.now() + 30_000;
  while (!existsSync(socket)) {
    if (child.exitCode !== null) throw new Error(`podman system service exited ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`podman system service did not create ${socket}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  process.env.DOCKER_HOST = `unix://${socket}`;
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  // Containers are reached at their own addresses; skip the lookup of Docker's "bridge" gateway.
  process.env.TESTCONTAINERS_HOST_OVERRIDE = '127.0.0.1';
  return {
    socket,
    stop: async () => {
      process.off('exit', kill);
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Whether container suites can run: podman and the images. As the other availability checks, a
 * missing piece fails in CI and skips the suite elsewhere.
 */
export async function containersAvailability(images: readonly string[]): Promise<{ run: boolean; reason?: string }> {
  const missing: string[] = [];
  if (!existsSync('/usr/bin/podman')) missing.push('podman (apt-get install podman; scripts/install-test-tools.sh installs it)');
  else for (const image of images) if (!(await podmanImageId(image))) missing.push(`image ${image} (run \`pnpm images\`)`);
  if (!missing.length) return { run: true };
  const message = `container suite unavailable:\n  ${missing.join('\n  ')}`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping container suite: ${message}`);
  return { run: false, reason: message };
}
