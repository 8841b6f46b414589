// transformation: headers of the request and of the response set, added and removed, and fields
// of a JSON request body set or removed, with values computed by CEL over the request, the
// consumer and the LLM fields the token reservation reads (docs/transformation.md). The
// configuration (a field of `traffic`), the IR the proxy runs, and the IR on the wire.
import { Type, type Static } from '@sinclair/typebox';
import { HeaderName } from '../schema/common.js';
import { NonEmpty, Nullable, Obj, Str, WireSecret } from '../schema/wire-parts.js';
import type { Secret } from '../secret.js';

/** Edits of one list (headers set, added or removed; body fields set or removed). */
export const MAX_TRANSFORM_EDITS = 16;
/** Segments of a body path: how deep into the body an edit reaches. */
export const MAX_BODY_PATH_DEPTH = 8;
export const MAX_BODY_PATH_LENGTH = 256;
/** Longest expression text (the CEL guard refuses longer ones whatever the field allows). */
export const MAX_TRANSFORM_EXPRESSION_LENGTH = 1024;
/** A body path: object member names (letters, digits, "_" and "-") joined with ".". */
export const BODY_PATH_PATTERN = `^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,${MAX_BODY_PATH_DEPTH - 1}}$`;
export const BODY_PATH_EXPECTED = `at most ${MAX_BODY_PATH_DEPTH} object member names of letters, digits, "_" and "-" (1 to 64 each), joined with "." (e.g. stream_options.include_usage)`;

/** The messages of the schema's rules, the same from the API server and from a file's check. */
export const HEADER_EDITED_ONCE = 'a header is edited once: set, add and remove name different headers';
export const BODY_FIELD_EDITED_ONCE = 'a body field is edited once, and not inside another edited field';

const Expression = (description: string) => Type.String({ minLength: 1, maxLength: MAX_TRANSFORM_EXPRESSION_LENGTH, description });

const When = Type.Optional(
  Expression('CEL expression giving a bool: the edit is made only when it is true (e.g. llm.stream). Same variables as value; default always.'),
);

const HeaderEdit = Type.Object(
  {
    name: HeaderName('The header.'),
    value: Expression(
      'CEL expression giving the value (a string, or a number or bool written as text), over request (method, path, host, headers), source.address, consumer (name, group, labels, claims) and llm (model, maxTokens, stream); e.g. consumer.group or "fixed" (a string literal is quoted).',
    ),
    when: When,
  },
  { additionalProperties: false, description: 'A header and the expression of its value.' },
);

const LIST_MAP = (key: string) => ({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [key] }) as const;
const LIST_SET = { 'x-kubernetes-list-type': 'set' } as const;

const HeaderEdits = (whose: string) =>
  Type.Object(
    {
      set: Type.Optional(Type.Array(HeaderEdit, { maxItems: MAX_TRANSFORM_EDITS, ...LIST_MAP('name'), description: `Headers of the ${whose} set to a value, replacing any the ${whose} has.` })),
      add: Type.Optional(Type.Array(HeaderEdit, { maxItems: MAX_TRANSFORM_EDITS, ...LIST_MAP('name'), description: `Headers of the ${whose} added: appended to a value the ${whose} has (comma-joined), else set.` })),
      remove: Type.Optional(Type.Array(HeaderName('A header name.'), { maxItems: MAX_TRANSFORM_EDITS, ...LIST_SET, description: `Headers removed from the ${whose}.` })),
    },
    {
      additionalProperties: false,
      description: `Headers of the ${whose}: set, then add, then remove.`,
      'x-kubernetes-validations': [
        {
          rule: '!has(self.remove) || ((!has(self.set) || self.set.all(e, !(e.name in self.remove))) && (!has(self.add) || self.add.all(e, !(e.name in self.remove))))',
          message: HEADER_EDITED_ONCE,
        },
        { rule: '!has(self.set) || !has(self.add) || self.set.all(e, !self.add.exists(a, a.name == e.name))', message: HEADER_EDITED_ONCE },
      ],
    },
  );

const BodyPath = Type.String({ minLength: 1, maxLength: MAX_BODY_PATH_LENGTH, pattern: BODY_PATH_PATTERN, description: `A field of the JSON body: member names joined with "." (at most ${MAX_BODY_PATH_DEPTH}), e.g. stream_options.include_usage.`, expected: BODY_PATH_EXPECTED });

const BodyEdit = Type.Object(
  {
    path: BodyPath,
    value: Expression(
      'CEL expression giving the JSON value written there (a string, number, bool, null, list or map), over the same variables as header values; e.g. "gpt-4o-mini", true, or llm.maxTokens > 1024 || llm.maxTokens == 0 ? 1024 : llm.maxTokens.',
    ),
    when: When,
  },
  { additionalProperties: false, description: 'A field of the body and the expression of its value; objects on the way are made when missing.' },
);

const BodyEdits = Type.Object(
  {
    set: Type.Optional(Type.Array(BodyEdit, { maxItems: MAX_TRANSFORM_EDITS, ...LIST_MAP('path'), description: 'Fields set, made when missing.' })),
    remove: Type.Optional(Type.Array(BodyPath, { maxItems: MAX_TRANSFORM_EDITS, ...LIST_SET, description: 'Fields removed (nothing happens where the body has none).' })),
  },
  {
    additionalProperties: false,
    'x-kubernetes-validations': [
      {
        rule: "!has(self.set) || !has(self.remove) || self.set.all(e, self.remove.all(r, r != e.path && !r.startsWith(e.path + '.') && !e.path.startsWith(r + '.')))",
        message: BODY_FIELD_EDITED_ONCE,
      },
      { rule: "!has(self.set) || self.set.all(a, self.set.all(b, !b.path.startsWith(a.path + '.')))", message: BODY_FIELD_EDITED_ONCE },
      { rule: "!has(self.remove) || self.remove.all(a, self.remove.all(b, !b.startsWith(a + '.')))", message: BODY_FIELD_EDITED_ONCE },
    ],
    description:
      'Fields of a JSON object body. A request that has a body that is not a JSON object is refused (400), one larger than config.maxRequestBodyBytes too (413); a request without a body is forwarded without one.',
  },
);

export const TransformationConfig = Type.Object(
  {
    request: Type.Optional(
      Type.Object(
        { headers: Type.Optional(HeaderEdits('request')), body: Type.Optional(BodyEdits) },
        { additionalProperties: false, description: 'What is changed in the request before it is rate limited and forwarded.' },
      ),
    ),
    response: Type.Optional(
      Type.Object({ headers: Type.Optional(HeaderEdits('response')) }, { additionalProperties: false, description: 'What is changed in the backend\'s response; its values are computed from the request.' }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Changes to the request and the response, computed by CEL after authentication and authorization and before the rate limits, so budgets see the transformed request. An expression that fails at request time refuses the request (500 TG_TRANSFORM_FAILED).',
  },
);
export type TransformationConfig = Static<typeof TransformationConfig>;

/**
 * An expression of the transformation: a Secret when it may hold a credential (the value of a
 * credential header, or a literal that looks like one), so no dump or trace prints it.
 */
export type TransformExpressionIR = string | Secret;

/** An edit's value and its condition (null: always). */
interface EditIR {
  readonly value: TransformExpressionIR;
  readonly when: TransformExpressionIR | null;
}

export interface HeaderEditIR extends EditIR {
  /** Lower case. */
  readonly name: string;
}

export interface HeaderEditsIR {
  readonly set: readonly HeaderEditIR[];
  readonly add: readonly HeaderEditIR[];
  /** Lower case. */
  readonly remove: readonly string[];
}

export interface BodyEditIR extends EditIR {
  readonly path: string;
}

export interface BodyEditsIR {
  readonly set: readonly BodyEditIR[];
  readonly remove: readonly string[];
}

export interface TransformationIR {
  readonly request: { readonly headers: HeaderEditsIR | null; readonly body: BodyEditsIR | null };
  readonly response: { readonly headers: HeaderEditsIR | null };
}

const WireExpression = Type.Union([Str('CEL expression.', MAX_TRANSFORM_EXPRESSION_LENGTH), WireSecret]);
const WireHeaderEdit = Obj({ name: NonEmpty('Header name, lower case.', 256), value: WireExpression, when: Nullable(WireExpression) }, 'A header edit.');
const WireHeaderEdits = Obj(
  {
    set: Type.Array(WireHeaderEdit, { maxItems: MAX_TRANSFORM_EDITS }),
    add: Type.Array(WireHeaderEdit, { maxItems: MAX_TRANSFORM_EDITS }),
    remove: Type.Array(NonEmpty('Header name, lower case.', 256), { maxItems: MAX_TRANSFORM_EDITS }),
  },
  'Header edits.',
);
const WirePath = Type.String({ minLength: 1, maxLength: MAX_BODY_PATH_LENGTH, pattern: BODY_PATH_PATTERN });

export const TransformationWire = Obj(
  {
    request: Obj(
      {
        headers: Nullable(WireHeaderEdits),
        body: Nullable(
          Obj(
            {
              set: Type.Array(Obj({ path: WirePath, value: WireExpression, when: Nullable(WireExpression) }, 'A body edit.'), { maxItems: MAX_TRANSFORM_EDITS }),
              remove: Type.Array(WirePath, { maxItems: MAX_TRANSFORM_EDITS }),
            },
            'Body edits.',
          ),
        ),
      },
      'Request edits.',
    ),
    response: Obj({ headers: Nullable(WireHeaderEdits) }, 'Response edits.'),
  },
  'Transformation.',
);
