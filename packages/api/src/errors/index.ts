export { defineErrors, catalogEntries, formatMessage, CatalogError, type Catalog, type ErrorDef, type ErrorEntry, type Params } from './define.js';
export { API_ERRORS } from './catalog.js';
