// Images on the e2e node: nothing is pulled (no registry is reachable, and none may be), so every
// image a pod uses is imported into the node's containerd: the pause, CoreDNS and echo-basic
// images from the tool cache, and the project's images (`pnpm images`) from podman's storage.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { cacheDir, REPO_ROOT, VERSIONS } from '../tools.js';
import { run } from '../exec.js';

export const PAUSE_IMAGE = `tollgate.local/pause:${VERSIONS.pause}`;
export const COREDNS_IMAGE = `registry.k8s.io/coredns/coredns:${VERSIONS.coredns}`;
export const ECHO_BASIC_IMAGE = `registry.k8s.io/gateway-api/echo-basic:${VERSIONS.gatewayApi}`;
/** The echo-basic tags the Gateway API conformance manifests name; one image serves them all. */
export const ECHO_BASIC_ALIASES = ['registry.k8s.io/gateway-api/echo-basic:v1.5.1', 'registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3', 'registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2'];

/** The project's images as `pnpm images` tags them (repository overridable as there). */
export function projectImage(name: 'tollgate' | 'tollgate-controller' | 'mock-llm'): string {
  const dir = { tollgate: 'packages/proxy', 'tollgate-controller': 'packages/controller', 'mock-llm': 'packages/mock-llm' }[name];
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, dir, 'package.json'), 'utf8')) as { version: string }).version;
  return `${process.env.TOLLGATE_IMAGE_REPOSITORY ?? 'ghcr.io/tollgate-dev'}/${name}:${version}`;
}

/** The OPA test-tool image (`bash images/build-images.sh opa`), at e2e/tools.json's opaEnvoy version. */
export function opaImage(): string {
  if (!VERSIONS.opaEnvoy) throw new Error('e2e/tools.json has no opaEnvoy version: this checkout has no OPA test tool (e2e/tools/opa-envoy)');
  return `tollgate.local/opa-envoy:${VERSIONS.opaEnvoy}`;
}

/** The extProc test processor's image (`bash images/build-images.sh ext-proc`), at e2e/tools.json's goControlPlane version. */
export function extProcImage(): string {
  return `tollgate.local/ext-proc:${VERSIONS.goControlPlane}`;
}

/** The environment podman runs with (images/podman-env.sh's containers.conf). */
export function podmanEnv(): NodeJS.ProcessEnv {
  const out = execFileSync('bash', ['-c', 'source "$1" && printf %s "$CONTAINERS_CONF"', 'bash', join(REPO_ROOT, 'images/podman-env.sh')], { encoding: 'utf8' });
  return { ...process.env, CONTAINERS_CONF: out };
}

export async function podmanImageId(image: string): Promise<string | undefined> {
  try {
    return (await run('podman', ['image', 'inspect', '--format', '{{.Id}}', image], { env: podmanEnv() })).trim();
  } catch {
    return undefined;
  }
}

/**
 * An OCI archive of a podman image, cached by image ID (saving a 300 MB image takes seconds;
 * a rebuilt image gets a new archive and old ones are removed after an hour).
 */
export async function ociArchive(image: string): Promise<string> {
  const id = await podmanImageId(image);
  if (!id) throw new Error(`image ${image} is not in podman's storage; build it with \`pnpm images\``);
  const dir = join(cacheDir(), 'image-archives');
  mkdirSync(dir, { recursive: true });
  const stem = image.replace(/[^A-Za-z0-9.-]+/g, '_');
  const file = join(dir, `${stem}@${id.slice(0, 12)}.oci.tar`);
  if (existsSync(file)) return file;
  // Several test runs on one machine share this directory: a run's own temporary file, and
  // archives of other builds only once they are an hour old (another run may be importing one).
  const tmp = `${file}.${process.pid}.tmp`;
  for (const old of readdirSync(dir)) {
    const path = join(dir, old);
    if (old.startsWith(`${stem}@`) && !old.endsWith('.tmp') && ageMs(path) > 3_600_000) rmSync(path, { force: true });
  }
  try {
    await run('podman', ['save', '--quiet', '--format', 'oci-archive', '-o', tmp, image], { env: podmanEnv(), timeoutMs: 300_000 });
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
  return file;
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0; // gone meanwhile
  }
}

/** The node images' archives in the tool cache (scripts/install-test-tools.sh builds them). */
export function nodeImageArchives(nodeImagesDir: string): { file: string; name: string; aliases: string[] }[] {
  return [
    { file: join(nodeImagesDir, 'pause.oci.tar'), name: PAUSE_IMAGE, aliases: [] },
    { file: join(nodeImagesDir, 'coredns.oci.tar'), name: COREDNS_IMAGE, aliases: [] },
    { file: join(nodeImagesDir, 'echo-basic.oci.tar'), name: ECHO_BASIC_IMAGE, aliases: ECHO_BASIC_ALIASES },
  ];
}
