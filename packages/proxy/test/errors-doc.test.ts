// docs/errors.md lists every catalog's codes with status, message and fix, equal to the
// catalogs; codes are unique across packages.
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { API_ERRORS, catalogEntries } from '@tollgate/api';
import { CONTROLLER_ERRORS } from '@tollgate/controller';
import { KIT_ERRORS } from '@tollgate/kit';
import { MOCK_ERRORS } from '@tollgate/mock-llm';
import { docCodes, syncErrorsDoc } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { PROXY_ERRORS } from '../src/errors.js';

const DOC = fileURLToPath(new URL('../../../docs/errors.md', import.meta.url));
const CATALOGS = {
  '@tollgate/proxy': catalogEntries(PROXY_ERRORS),
  '@tollgate/kit': catalogEntries(KIT_ERRORS),
  '@tollgate/api': catalogEntries(API_ERRORS),
  '@tollgate/mock-llm': catalogEntries(MOCK_ERRORS),
  '@tollgate/controller': catalogEntries(CONTROLLER_ERRORS),
};

describe('docs/errors.md', () => {
  it('has each catalog as its table (UPDATE_ERRORS_DOC=1 rewrites them)', () => {
    expect(syncErrorsDoc(DOC, CATALOGS)).toEqual([]);
  });

  it('names every code once across all packages (other packages check their own sections)', () => {
    const documented = docCodes(readFileSync(DOC, 'utf8'));
    expect(documented.filter((code, i) => documented.indexOf(code) !== i)).toEqual([]);
    const all = Object.values(CATALOGS).flatMap((entries) => entries.map((e) => e.code));
    expect(all.filter((code) => !documented.includes(code))).toEqual([]);
  });
});
