// The Node.js release Tollgate's programs run on. An older one fails in ways that name other
// causes: a proxy on several threads whose worker cannot join the main thread's port (the
// listen option that shares it, reusePort, does not exist before Node 22.12 and is ignored),
// reported as "port in use". Each program's bin checks first and says what to do instead.

/** The oldest Node.js major release the programs run on (the repository's `engines`). */
export const MIN_NODE_MAJOR = 26;

/** Why `program` cannot run on this Node.js (a line for stderr), or null when it can. */
export function nodeTooOld(program: string, version: string = process.versions.node): string | null {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return null;
  return `${program}: needs Node.js ${MIN_NODE_MAJOR} or newer; this is ${version} (${process.execPath}). Run it with Node.js ${MIN_NODE_MAJOR}: \`. scripts/env.sh\` in a checkout puts the repository's Node first on PATH.`;
}
