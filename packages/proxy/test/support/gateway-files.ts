// What the authentication suites ask of a running gateway: a metric's value, and an edit of a
// file its config names (a key file, an htpasswd) awaited through the reload it causes.
import { once } from 'node:events';
import { rename, writeFile } from 'node:fs/promises';
import type { TestGateway } from '../helpers.js';

/** The value of one series, `name{labels}` exactly as exposed; 0 when it is not there. */
export async function metricValue(gw: TestGateway, series: string): Promise<number> {
  const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${series} `));
  return found ? Number(found.split(' ').at(-1)) : 0;
}

/** Writes `file` beside itself and renames it over, then resolves with the proxy's reload outcome (its event, not a timer). */
export async function replaceNamedFile(gw: TestGateway, file: string, text: string): Promise<'reloaded' | 'refused'> {
  const outcome = Promise.race([once(gw.gateway.source, 'reloaded').then(() => 'reloaded' as const), once(gw.gateway.source, 'refused').then(() => 'refused' as const)]);
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
  return outcome;
}
