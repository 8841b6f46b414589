// basicAuth: users and password hashes of an htpasswd file (a Secret key in a cluster, a file
// standalone). bcrypt, SHA-crypt ($5$, $6$) and apr1 hashes are accepted; {SHA}, crypt(3) and
// plain-text lines are refused naming the line, since they can be cracked or read as they are.
import { Type, type Static } from '@sinclair/typebox';
import { Obj, NonEmpty, Lit, WireSecret } from '../schema/wire-parts.js';
import type { Secret } from '../secret.js';
import { MAX_CONSUMER_NAME_LENGTH } from '../cel/surfaces.js';
import { FilePath, ObjectKeyRefSchema } from './refs.js';

/** What htpasswd content may hold (docs/authentication.md, "basicAuth"). */
export const BASIC_AUTH_BOUNDS = {
  /** Lines of the content, blank lines and comments included. */
  maxLines: 100_000,
  maxLineLength: 1024,
  /** bcryptjs took 4 s for one verification at cost 14 on a loaded 2-core machine (each step doubles it; htpasswd -B uses 5). */
  maxBcryptCost: 14,
  /** SHA-512-crypt took 2.6 s at 1,000,000 rounds there (the default is 5000). */
  maxShaCryptRounds: 1_000_000,
} as const;

export const BasicAuthConfig = Type.Object(
  {
    htpasswd: Type.Object(
      {
        secretRef: Type.Optional(ObjectKeyRefSchema('the htpasswd content', '.htpasswd')),
        file: Type.Optional(FilePath('the htpasswd content')),
      },
      {
        additionalProperties: false,
        description: 'Where the htpasswd content is: a Secret key (cluster) or a file (standalone).',
        'x-kubernetes-validations': [{ rule: 'has(self.secretRef) != has(self.file)', message: 'exactly one of secretRef or file must be set' }],
      },
    ),
    realm: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*$', description: 'Realm of the WWW-Authenticate challenge; default "tollgate". No double quotes or backslashes.', expected: 'printable ASCII without " or \\' })),
  },
  { additionalProperties: false, description: 'Callers must send HTTP Basic credentials of a user of the htpasswd content; the Authorization header is removed before forwarding.' },
);
export type BasicAuthConfig = Static<typeof BasicAuthConfig>;

export type PasswordScheme = 'bcrypt' | 'sha256-crypt' | 'sha512-crypt' | 'apr1';

export interface BasicAuthUserIR {
  readonly user: string;
  readonly scheme: PasswordScheme;
  /** The hash as written in the htpasswd line; a Secret: a hash can be attacked offline. */
  readonly hash: Secret;
}

export interface BasicAuthIR {
  readonly realm: string;
  /** Where the users came from, for dumps: `Secret <ns>/<name> key <k>` or `file <path>`. */
  readonly origin: string;
  readonly users: readonly BasicAuthUserIR[];
}

export const BasicAuthWire = Obj(
  {
    realm: NonEmpty('Realm.', 128),
    origin: NonEmpty('Where the users came from.', 600),
    users: Type.Array(
      Obj(
        {
          user: NonEmpty('User name.', MAX_CONSUMER_NAME_LENGTH),
          scheme: Type.Union([Lit('bcrypt'), Lit('sha256-crypt'), Lit('sha512-crypt'), Lit('apr1')]),
          hash: WireSecret,
        },
        'A user.',
      ),
      { maxItems: BASIC_AUTH_BOUNDS.maxLines },
    ),
  },
  'Basic authentication.',
);
