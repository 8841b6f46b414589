// Lets Node run the project's TypeScript sources directly (Node 26 strips the types): an
// import of `./x.js` that does not exist resolves to `./x.ts`, as TypeScript's NodeNext
// resolution does. For scripts that reuse the test harness (scripts/cluster.mjs); the
// packages themselves run compiled.
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, next) {
    try {
      return next(specifier, context);
    } catch (err) {
      if (err?.code === 'ERR_MODULE_NOT_FOUND' && specifier.startsWith('.') && specifier.endsWith('.js')) {
        return next(`${specifier.slice(0, -3)}.ts`, context);
      }
      throw err;
    }
  },
});
