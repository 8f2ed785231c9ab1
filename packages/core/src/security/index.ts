// Keeping the host's secrets away from the model (issue 32): what is secret, and its redaction.
export {
  collectHostSecrets,
  type HostSecret,
  isHostSecretName,
  SERVER_SECRET_VARIABLES,
  urlPassword,
} from './host-secrets.js';
export { MIN_REDACTED_SECRET_LENGTH, type NamedSecret, SecretRedactor } from './secret-redactor.js';
