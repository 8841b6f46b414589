// docs/errors.md has the controller's catalog as its table (UPDATE_ERRORS_DOC=1 rewrites it).
import { fileURLToPath } from 'node:url';
import { catalogEntries } from '@tollgate/api';
import { syncErrorsDoc } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_ERRORS } from '../src/errors.js';

const DOC = fileURLToPath(new URL('../../../docs/errors.md', import.meta.url));

describe('docs/errors.md', () => {
  it('lists the controller catalog', () => {
    expect(syncErrorsDoc(DOC, { '@tollgate/controller': catalogEntries(CONTROLLER_ERRORS) })).toEqual([]);
  });
});
