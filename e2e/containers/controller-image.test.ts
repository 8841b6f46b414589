// The controller's image as a container: it reports its version, and outside a pod without a
// kubeconfig it refuses to run with an error that says how to give it credentials. Runs when
// the controller package is in the checkout (`pnpm images` builds its image then).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { podmanEnv, projectImage } from '../lib/node/images.js';
import { containersAvailability, startPodmanService, type PodmanService } from '../lib/podman-service.js';
import { ReadOnlyContainer } from '../lib/read-only-container.js';
import { REPO_ROOT } from '../lib/tools.js';

const packageJson = join(REPO_ROOT, 'packages/controller/package.json');
const hasController = existsSync(packageJson);
const IMAGE = hasController ? projectImage('tollgate-controller') : '';
const availability = hasController ? await containersAvailability([IMAGE]) : { run: false };

/** Runs the image once with `args` (read-only root filesystem); its exit code and output. */
async function runOnce(args: string[]): Promise<{ code: number; output: string }> {
  const container = await new ReadOnlyContainer(IMAGE).withCommand(args).withWaitStrategy(Wait.forLogMessage(/\S/)).start();
  const id = container.getId();
  try {
    // The process's own exit (testcontainers' one-shot wait treats a non-zero exit as a failed start).
    const code = Number(execFileSync('podman', ['wait', id], { env: podmanEnv(), encoding: 'utf8' }).trim());
    const output = await new Promise<string>((resolve, reject) => {
      let text = '';
      container.logs().then((stream) => {
        stream.on('data', (d: Buffer | string) => (text += d.toString()));
        stream.on('end', () => resolve(text));
        stream.on('error', reject);
      }, reject);
    });
    return { code, output };
  } finally {
    execFileSync('podman', ['rm', '--force', '--ignore', id], { env: podmanEnv() });
  }
}

describe.skipIf(!availability.run)('tollgate-controller image (podman)', () => {
  let service: PodmanService;
  beforeAll(async () => {
    service = await startPodmanService();
  }, 60_000);
  afterAll(async () => {
    await service?.stop();
  });

  it('prints its version', async () => {
    const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };
    expect(await runOnce(['--version'])).toEqual({ code: 0, output: `tollgate-controller ${version}\n` });
  });

  it('without credentials refuses to run, naming the error and the fix', async () => {
    const r = await runOnce([]);
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/TG_CONTROLLER_NO_CREDENTIALS/);
    expect(r.output).toMatch(/--kubeconfig|KUBECONFIG/);
  });
});
