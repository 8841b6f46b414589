// A certificate and its key as files of the standalone config: a listener's certificates and a
// backend's client certificate.
import { Type, type Static } from '@sinclair/typebox';

export const CertificateFilesConfig = Type.Object(
  {
    certFile: Type.String({ minLength: 1, maxLength: 4096, description: 'PEM certificate chain, leaf first; a relative path is relative to the config file.' }),
    keyFile: Type.String({ minLength: 1, maxLength: 4096, description: 'PEM private key of the certificate (unencrypted); a relative path is relative to the config file.' }),
  },
  { additionalProperties: false, description: 'A certificate and its key, read from files when the config is loaded or reloaded.' },
);
export type CertificateFilesConfig = Static<typeof CertificateFilesConfig>;
