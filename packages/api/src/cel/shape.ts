// The static type of a CEL value together with the most it can hold: a string's longest
// length, a list's most elements (and how deeply @bufbuild/cel has nested it: see `depth`),
// a map's most entries. The checker computes one per expression node; the cost of every
// operation is a function of its operands' shapes, which is what makes the estimate a bound.

export type Shape =
  | { readonly t: 'bool' | 'int' | 'uint' | 'double' | 'null' }
  | { readonly t: 'string' | 'bytes'; readonly len: number }
  | {
      readonly t: 'list';
      readonly len: number;
      /**
       * How many list concatenations it may be made of, nested: @bufbuild/cel keeps `a + b`
       * as a view over both lists, so reading an element of a list built by `map` or `filter`
       * over n elements walks up to n views.
       */
      readonly depth: number;
      readonly elem: Shape;
    }
  | { readonly t: 'map'; readonly len: number; readonly key: Shape; readonly value: Shape }
  /** A declared variable with named fields (request, source, llm): a map at run time. */
  | { readonly t: 'record'; readonly name: string; readonly fields: Readonly<Record<string, Shape>> }
  /** The element of an empty list literal: joins with anything. */
  | { readonly t: 'none' };

export type Kind = Shape['t'];

export const BOOL: Shape = { t: 'bool' };
export const INT: Shape = { t: 'int' };
export const UINT: Shape = { t: 'uint' };
export const DOUBLE: Shape = { t: 'double' };
export const NULL: Shape = { t: 'null' };
export const NONE: Shape = { t: 'none' };
export const str = (len: number): Shape => ({ t: 'string', len });
export const bytes = (len: number): Shape => ({ t: 'bytes', len });
export const list = (elem: Shape, len: number, depth = 0): Shape => ({ t: 'list', len, depth, elem });
export const map = (key: Shape, value: Shape, len: number): Shape => ({ t: 'map', len, key, value });

/** A CEL type name, as an error message shows it. */
export function typeName(s: Shape): string {
  switch (s.t) {
    case 'null':
      return 'null_type';
    case 'none':
      return 'dyn';
    case 'list':
      return `list(${typeName(s.elem)})`;
    case 'map':
      return `map(${typeName(s.key)}, ${typeName(s.value)})`;
    case 'record':
      return s.name;
    default:
      return s.t;
  }
}

/** Whether two shapes are of the same CEL type (sizes aside). */
export function sameType(a: Shape, b: Shape): boolean {
  if (a.t === 'none' || b.t === 'none') return true;
  if (a.t !== b.t) return false;
  if (a.t === 'list' && b.t === 'list') return sameType(a.elem, b.elem);
  if (a.t === 'map' && b.t === 'map') return sameType(a.key, b.key) && sameType(a.value, b.value);
  if (a.t === 'record' && b.t === 'record') return a.name === b.name;
  return true;
}

/** The smallest shape holding both (callers check sameType first). */
export function join(a: Shape, b: Shape): Shape {
  if (a.t === 'none') return b;
  if (b.t === 'none') return a;
  if ((a.t === 'string' || a.t === 'bytes') && a.t === b.t) return { t: a.t, len: Math.max(a.len, b.len) };
  if (a.t === 'list' && b.t === 'list') return list(join(a.elem, b.elem), Math.max(a.len, b.len), Math.max(a.depth, b.depth));
  if (a.t === 'map' && b.t === 'map') return map(join(a.key, b.key), join(a.value, b.value), Math.max(a.len, b.len));
  return a;
}

/** Most elements or characters a value of this shape has (1 for scalars): what traversing it costs. */
export function lengthOf(s: Shape): number {
  return s.t === 'string' || s.t === 'bytes' || s.t === 'list' || s.t === 'map' ? s.len : 1;
}
