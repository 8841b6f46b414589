// What a GatewayPolicy may not carry when it targets a GRPCRoute. A gRPC call is an HTTP/2 POST
// of length-prefixed protobuf messages answered with a status in trailers: every check that
// reads headers (keys, tokens, authorization rules, limits counted in requests, header edits,
// an external processor or authorization service, cors and csrf for gRPC-Web clients, failover)
// applies to it as to an HTTP request, and an answer the gateway makes is given as a gRPC
// status (docs/grpcroute.md). The fields below act on an LLM's JSON bodies or answer in a way
// no gRPC client reads: rather than leave them without effect on the route's calls, the policy
// is not accepted (Invalid, each field named), as a policy whose failover targets a Gateway is
// not: its status is one verdict per Gateway, and a verdict for part of its targets would be
// hidden behind the others'.
import type { Problem } from '@tollgate/api';
import { GATEWAY_GROUP, type GatewayPolicy } from '../types/gateway-api.js';

/** Appends to `out` each field of `p` a GRPCRoute's calls cannot be given, when `p` targets one. */
export function checkGrpcTargets(p: GatewayPolicy, out: Problem[]): void {
  const i = p.spec.targetRefs.findIndex((t) => t.group === GATEWAY_GROUP && t.kind === 'GRPCRoute');
  const t = p.spec.traffic;
  if (i < 0 || !t) return;
  const grpc = `spec.targetRefs[${i}] is a GRPCRoute`;
  const fix = 'or move it to a policy that targets no GRPCRoute';
  t.rateLimit?.local?.forEach((l, j) => {
    if (l.tokens !== undefined)
      out.push({ path: `spec.traffic.rateLimit.local[${j}].tokens`, message: `counts LLM tokens from a JSON response's usage, which gRPC calls do not carry (${grpc}): limit requests, ${fix}` });
  });
  t.rateLimit?.global?.descriptors.forEach((d, j) => {
    if (d.unit === 'Tokens')
      out.push({ path: `spec.traffic.rateLimit.global.descriptors[${j}].unit`, message: `Tokens counts LLM tokens from a JSON response's usage, which gRPC calls do not carry (${grpc}): use Requests, ${fix}` });
  });
  if (t.transformation?.request?.body)
    out.push({ path: 'spec.traffic.transformation.request.body', message: `edits fields of a JSON body, and gRPC calls carry protobuf messages (${grpc}): edit headers only, ${fix}` });
  if (t.directResponse)
    out.push({ path: 'spec.traffic.directResponse', message: `answers with an HTTP status and body, which a gRPC client does not read as a call's status (${grpc}): refuse calls with authorization, ${fix}` });
  if (t.oidc)
    out.push({ path: 'spec.traffic.oidc', message: `signs browsers in by redirects, which gRPC clients do not follow (${grpc}): use jwt or apiKey, ${fix}` });
}
