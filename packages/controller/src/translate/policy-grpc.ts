// What a GatewayPolicy may not carry for a GRPCRoute target. A gRPC call is an HTTP/2 POST of
// length-prefixed protobuf messages answered with a status in trailers: every check that reads
// headers (keys, tokens, authorization rules, limits counted in requests, header edits, an
// external processor or authorization service, timeouts, cors for gRPC-Web) applies to it as
// to an HTTP request, and an answer the gateway makes is given as a gRPC status. The fields
// below act on an LLM's JSON bodies or answer in a way no gRPC client reads: rather than
// leaving them silently without effect on the route's calls, the policy is not accepted for
// the GRPCRoute (Accepted False, Invalid, naming each), and keeps applying to its other targets.
import type { Problem } from '@tollgate/api';
import type { GatewayPolicy } from '../types/gateway-api.js';

const NO_PROBLEMS: readonly Problem[] = [];
const cache = new WeakMap<GatewayPolicy, readonly Problem[]>();

/** The fields of `p` a GRPCRoute's calls cannot be given, each with the reason; none: it applies. */
export function grpcRouteProblems(p: GatewayPolicy): readonly Problem[] {
  const hit = cache.get(p);
  if (hit) return hit;
  const out: Problem[] = [];
  const t = p.spec.traffic;
  const grpc = 'a GRPCRoute\'s calls';
  t?.rateLimit?.local?.forEach((l, i) => {
    if (l.tokens !== undefined)
      out.push({ path: `spec.traffic.rateLimit.local[${i}].tokens`, message: `counts LLM tokens from a JSON response's usage, which ${grpc} do not have; limit requests, or target the HTTPRoute that carries the LLM calls` });
  });
  t?.rateLimit?.global?.descriptors.forEach((d, i) => {
    if (d.unit === 'Tokens')
      out.push({ path: `spec.traffic.rateLimit.global.descriptors[${i}].unit`, message: `Tokens counts LLM tokens from a JSON response's usage, which ${grpc} do not have; use Requests` });
  });
  if (t?.transformation?.request?.body)
    out.push({ path: 'spec.traffic.transformation.request.body', message: `edits fields of a JSON body; ${grpc} carry protobuf messages: edit headers only` });
  if (t?.directResponse)
    out.push({ path: 'spec.traffic.directResponse', message: `answers with an HTTP status and body, which a gRPC client does not read as a status; refuse calls with authorization instead` });
  if (t?.oidc)
    out.push({ path: 'spec.traffic.oidc', message: `signs browsers in by redirects, which a gRPC client does not follow; use jwt (bearer tokens) or apiKey` });
  const result = out.length ? out : NO_PROBLEMS;
  cache.set(p, result);
  return result;
}
