// Who chooses what the proxies run. The image is the cluster admin's: the controller's
// --proxy-image, or the GatewayClass's parameters (a ConfigMap the class names; the class is
// cluster-scoped, so only whoever may edit GatewayClasses points it somewhere). A Gateway's
// owner may name an image (its parametersRef ConfigMap, or the tollgate.dev/image annotation)
// only when the controller's --gateway-proxy-images lists it: an allow-list of image
// references and prefixes the admin chose, empty by default.
//
// An entry is matched against the image on whole path components, after both are normalised
// the way container runtimes resolve a name (`tollgate` is `docker.io/library/tollgate`), so
// `registry.example.com/tollgate` never allows `registry.example.com/tollgate-evil` nor
// `registry.example.com.evil.io/tollgate`:
//
//   registry.example.com/                any image of that registry
//   registry.example.com/canary/         any repository under canary/
//   registry.example.com/tollgate        that repository, any tag or digest
//   registry.example.com/tollgate:0.2.0  that tag only (or @sha256:<digest>: that digest only)

/** An image reference split into its parts, normalised: domain lower-case, Docker Hub spelled out. */
export interface ImageName {
  readonly domain: string;
  /** Repository path inside the domain, e.g. `library/tollgate`. */
  readonly path: string;
  readonly tag?: string;
  readonly digest?: string;
}

/** At most this many entries in --gateway-proxy-images. */
export const MAX_GATEWAY_IMAGES = 64;

const DOMAIN = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?$/;
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * Parses `[domain[:port]/]path[:tag][@sha256:digest]`; undefined when it is not an image
 * reference. With `prefix`, a trailing `/` (a path prefix) is allowed and kept in `path`.
 */
export function parseImage(text: string, prefix = false): ImageName | undefined {
  if (text.length === 0 || text.length > 512) return undefined;
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return undefined;
  }
  const trailing = prefix && rest.endsWith('/') && tag === undefined && digest === undefined;
  if (trailing) rest = rest.slice(0, -1);
  const parts = rest.split('/');
  let domain = 'docker.io';
  // As the Docker reference grammar decides: the first component is a registry when it has a
  // dot or a port, or is localhost (or has upper case, which a path component cannot).
  const first = parts[0]!;
  if ((parts.length > 1 || trailing) && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase())) {
    parts.shift();
    if (!DOMAIN.test(first)) return undefined;
    domain = first.toLowerCase();
    if (domain === 'index.docker.io') domain = 'docker.io';
    // A registry alone (`registry.example.com/`): every repository of it.
    if (!parts.length) return { domain, path: '' };
  }
  if (!parts.every((p) => COMPONENT.test(p))) return undefined;
  // Docker Hub's official images: `tollgate` is `library/tollgate` (not for a prefix: `team/` is a user's).
  if (domain === 'docker.io' && parts.length === 1 && !trailing) parts.unshift('library');
  const path = parts.join('/') + (trailing ? '/' : '');
  return { domain, path, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

/** The parsed entries of --gateway-proxy-images. */
export type ImageAllowList = readonly ImageName[];

/** Parses the entries of --gateway-proxy-images; the first bad one is named with the fix. */
export function parseAllowList(entries: readonly string[]): { ok: true; list: ImageAllowList } | { ok: false; problem: string } {
  if (entries.length > MAX_GATEWAY_IMAGES) return { ok: false, problem: `${entries.length} entries; at most ${MAX_GATEWAY_IMAGES}: allow a registry or a path prefix (registry.example.com/team/) instead of each image` };
  const list: ImageName[] = [];
  for (const e of entries) {
    const parsed = parseImage(e, true);
    if (!parsed) return { ok: false, problem: `"${e}" is not an image reference or prefix; e.g. registry.example.com/ (a registry), registry.example.com/canary/ (a path), registry.example.com/tollgate (a repository) or registry.example.com/tollgate:0.2.0` };
    list.push(parsed);
  }
  return { ok: true, list };
}

function matches(entry: ImageName, image: ImageName): boolean {
  if (entry.domain !== image.domain) return false;
  if (entry.path === '') return true;
  if (entry.path.endsWith('/')) return image.path.startsWith(entry.path);
  if (entry.path !== image.path) return false;
  if (entry.digest !== undefined) return image.digest === entry.digest;
  if (entry.tag !== undefined) return image.tag === entry.tag && image.digest === undefined;
  return true;
}

/** True when `image` is a well-formed reference that an entry of the list allows. */
export function imageAllowed(image: string, list: ImageAllowList): boolean {
  const parsed = parseImage(image);
  return parsed !== undefined && list.some((e) => matches(e, parsed));
}

/** The list as the admin wrote it, for messages. */
export function describeAllowList(list: ImageAllowList): string {
  if (!list.length) return 'none';
  return list.map((e) => `${e.domain}${e.path ? `/${e.path}` : '/'}${e.tag ? `:${e.tag}` : ''}${e.digest ? `@${e.digest}` : ''}`).join(', ');
}
