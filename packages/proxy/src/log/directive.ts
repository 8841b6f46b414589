// Log directives are parsed by @tollgate/kit (shared with the controller); the proxy's module
// names are in ./logger.ts.
export { parseDirective, formatDirective, DirectiveError, type Directive } from '@tollgate/kit';
