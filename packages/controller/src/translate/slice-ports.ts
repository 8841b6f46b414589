// What a backendRef's translation reads of a Service's EndpointSlices besides their endpoints.
import type { V1EndpointSlice } from '@kubernetes/client-node';

const slicePorts = new WeakMap<V1EndpointSlice, readonly string[]>();
const slicesPorts = new WeakMap<readonly V1EndpointSlice[], string>();

/**
 * What a backendRef's translation reads of a Service's EndpointSlices: the distinct name and
 * appProtocol pairs of their ports (appProtocolOf). A route's rules depend on this string, not
 * on the slices: while it is the same, the routes to the Service translate as they did however
 * its endpoints change, a slice replaced by one of a new name or split in two included. Kept
 * per list of slices (one list per Service in an index) and per slice.
 */
export function slicePortsKey(slices: readonly V1EndpointSlice[]): string {
  let key = slicesPorts.get(slices);
  if (key !== undefined) return key;
  const pairs = new Set<string>();
  for (const slice of slices) {
    let own = slicePorts.get(slice);
    if (own === undefined) slicePorts.set(slice, (own = (slice.ports ?? []).map((p) => JSON.stringify([p.name ?? '', p.appProtocol ?? '']))));
    for (const pair of own) pairs.add(pair);
  }
  slicesPorts.set(slices, (key = [...pairs].sort().join(',')));
  return key;
}
