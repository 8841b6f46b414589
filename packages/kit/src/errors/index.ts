// Error catalogs: defineErrors is declared in @tollgate/api, the bottom package every other one
// imports (so the schemas package can have a catalog too), and re-exported here.
export { defineErrors, catalogEntries, formatMessage, CatalogError, type Catalog, type ErrorDef, type ErrorEntry, type Params } from '@tollgate/api';
export { KIT_ERRORS } from './catalog.js';
