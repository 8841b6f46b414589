// Building blocks of the wire schemas (snapshot-schema.ts and the policy kinds' own wire
// schemas under auth/): closed objects, literals, bounded strings.
import { Type, type TSchema } from '@sinclair/typebox';

export const Str = (description: string, maxLength = 4096) => Type.String({ maxLength, description });
export const NonEmpty = (description: string, maxLength = 4096) => Type.String({ minLength: 1, maxLength, description });
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Obj = <P extends Record<string, TSchema>>(properties: P, description: string) => Type.Object(properties, { additionalProperties: false, description });
export const Lit = <V extends string | number>(v: V) => Type.Literal(v);
export const WireSecret = Obj({ secret: Str('The credential, in clear: the snapshot stream is the one place it travels.', 65536) }, 'A credential.');
