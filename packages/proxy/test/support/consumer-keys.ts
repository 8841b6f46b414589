// The apiKey consumers of the budget tests: a key file in a temp dir for the suite (alice with
// two keys and bob in team-a, carol in team-b), and the headers that present each key.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

const as = (key: string) => ({ 'x-api-key': key });
export const ALICE = as('sk-alice-0123456789');
export const ALICE_2 = as('sk-alice-second-key');
export const BOB = as('sk-bob-0123456789ab');
export const CAROL = as('sk-carol-0123456789');
/** A key no consumer has: apiKey refuses it. */
export const NOBODY = as('sk-nobody-0123456789');

/** Writes the key file before the suite and removes it after; `path()` is its path. */
export function consumerKeyFile(): { path(): string } {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-consumers-'));
    await writeFile(
      join(dir, 'keys.json'),
      JSON.stringify([
        { key: ALICE['x-api-key'], consumer: 'alice', group: 'team-a' },
        { key: ALICE_2['x-api-key'], consumer: 'alice', group: 'team-a' },
        { key: BOB['x-api-key'], consumer: 'bob', group: 'team-a' },
        { key: CAROL['x-api-key'], consumer: 'carol', group: 'team-b' },
      ]),
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return { path: () => join(dir, 'keys.json') };
}
