/**
 * Encryption at rest for secrets we must be able to read back (university credentials, Google refresh
 * tokens): AES-256-GCM under `SECRET_KEY`. Every ciphertext is bound to its record through associated data,
 * so a ciphertext copied into another record (or another kind of record) does not decrypt.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptionError, SecretKeyMissingError } from './errors.ts';

const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Seals and opens secrets with one key. Text in, text out: `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
export class SecretBox {
  private readonly key: Buffer | undefined;

  /** `key` is `Config.secretKey`; without one, every seal/open throws {@link SecretKeyMissingError}. */
  constructor(key: Buffer | undefined) {
    if (key !== undefined && key.length !== KEY_BYTES)
      throw new RangeError(`secret key must be ${KEY_BYTES} bytes, got ${key.length}`);
    // A private copy, so that a caller reusing its buffer cannot change our key.
    this.key = key === undefined ? undefined : Buffer.from(key);
  }

  /** Whether a key is configured. */
  get available(): boolean {
    return this.key !== undefined;
  }

  /**
   * Encrypts `plaintext` under a fresh random IV. `associatedData` names the record the value belongs to
   * (e.g. `subscription:<id>:credential`); the same text must be given to {@link open}.
   */
  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.requireKey(), iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const encoded = [iv, cipher.getAuthTag(), ciphertext].map((bytes) => bytes.toString('base64url'));
    return [VERSION, ...encoded].join('.');
  }

  /** Decrypts a value made by {@link seal} for the same `associatedData`; throws {@link DecryptionError}. */
  open(sealed: string, associatedData: string): string {
    const key = this.requireKey();
    const parts = parseSealed(sealed);
    const decipher = createDecipheriv(ALGORITHM, key, parts.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(parts.tag);
    try {
      return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]).toString('utf8');
    } catch (error) {
      throw new DecryptionError(
        'cannot decrypt a stored secret: wrong SECRET_KEY, tampered data, or a value of another record',
        { cause: error },
      );
    }
  }

  private requireKey(): Buffer {
    if (this.key === undefined) throw new SecretKeyMissingError();
    return this.key;
  }
}

interface SealedParts {
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

/** Splits `v1.<iv>.<tag>.<ciphertext>`; anything else is a {@link DecryptionError}, before any crypto runs. */
function parseSealed(sealed: string): SealedParts {
  const parts = sealed.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION)
    throw new DecryptionError(`stored secret is not in the ${VERSION} format`);
  const [, iv, tag, ciphertext] = parts.map(decodeCanonical);
  // Exact lengths matter: GCM would accept a shorter tag, which is easier to forge.
  if (!iv || !tag || !ciphertext || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new DecryptionError('stored secret is malformed');
  }
  return { iv, tag, ciphertext };
}

/** Strict base64url: only the canonical spelling of some bytes, so that no two texts open to the same value. */
function decodeCanonical(part: string): Buffer | undefined {
  if (!BASE64URL.test(part)) return undefined;
  const bytes = Buffer.from(part, 'base64url');
  return bytes.toString('base64url') === part ? bytes : undefined;
}
