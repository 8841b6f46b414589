// CEL (global rate-limit descriptors, trace filters): the library and the protobuf runtime
// under it are about 5 MiB of a proxy's live heap, and most configs hold no CEL expression.
import type * as Cel from '@bufbuild/cel';
import { lazyModule } from './lazy-module.js';

/** The CEL library; the first call loads it (tens of ms). */
export const cel = lazyModule<typeof Cel>('@bufbuild/cel');
