// The CEL library: @bufbuild/cel and the protobuf runtime under it are about 5 MiB of a
// proxy's live heap, and most configs hold no CEL expression, so it is loaded by the first
// expression compiled. Only this folder uses it: every expression goes through compileCel().
import type * as Cel from '@bufbuild/cel';
import { lazyModule } from '../lazy-module.js';

/** The CEL library; the first call loads it (tens of ms). */
export const cel = lazyModule<typeof Cel>('@bufbuild/cel');
