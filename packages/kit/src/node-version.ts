// The Node.js release Tollgate's programs run on. An older one fails in ways that name other
// causes: a proxy on several threads whose worker cannot join the main thread's port (the
// listen option that shares it, reusePort, does not exist before Node 22.12 and is ignored),
// reported as "port in use". Each program's bin checks first and says what to do instead. (The
// single-file gwctl, scripts/gwctl-build.mjs, checks the same in its banner, which runs before any
// bundled code, and points its users to nodejs.org instead of a checkout's scripts/env.sh.)

/** The oldest Node.js major release the programs run on (the repository's `engines`). */
export const MIN_NODE_MAJOR = 26;

/** Why `program` cannot run on this Node.js (a line for stderr), or null when it can. */
export function nodeTooOld(program: string, version: string = process.versions.node): string | null {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return null;
  return `${program}: needs Node.js ${MIN_NODE_MAJOR} or newer; this is ${version} (${process.execPath}). Run it with Node.js ${MIN_NODE_MAJOR}: \`. scripts/env.sh\` in a checkout puts the repository's Node first on PATH.`;
}

/** For a program's bin, before it loads anything else: on a Node.js too old, says why on stderr and exits 1. */
export function refuseOldNode(program: string): void {
  const tooOld = nodeTooOld(program);
  if (tooOld === null) return;
  process.stderr.write(`${tooOld}\n`);
  process.exit(1);
}
