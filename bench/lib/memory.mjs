// Readings of a Tollgate process's memory through its admin API (GET /memory).

async function memory(adminUrl, query = '') {
  const res = await fetch(`${adminUrl}/memory${query}`);
  if (!res.ok) throw new Error(`GET ${adminUrl}/memory${query}: ${res.status}`);
  return res.json();
}

/**
 * Every byte the JavaScript heap has handed out since the process started, garbage included:
 * two readings around a known number of requests give the bytes a request allocates, which the
 * machine's other load does not move (where CPU time does).
 */
export async function allocatedBytes(adminUrl) {
  return (await memory(adminUrl)).heap.totalAllocatedBytes;
}

/** The live heap in MiB, read after a full collection. */
export async function liveHeapMiB(adminUrl) {
  return (await memory(adminUrl, '?gc=true')).heap.usedHeapSize / 1048576;
}
