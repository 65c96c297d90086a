/** Typed failures of the secret box: no key configured, or a sealed value that does not open. */

/** Encryption was asked for but `SECRET_KEY` is not configured. */
export class SecretKeyMissingError extends Error {
  override name = 'SecretKeyMissingError';

  constructor() {
    super('SECRET_KEY is not configured: secrets cannot be stored or read');
  }
}

/**
 * A sealed value cannot be opened: malformed, tampered with, sealed under another key, or sealed for another
 * record. The message never contains the value.
 */
export class DecryptionError extends Error {
  override name = 'DecryptionError';
}
