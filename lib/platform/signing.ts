import { createHash } from 'node:crypto';

/**
 * The platform's general server-callback signature: lowercase hex SHA1 of secret + nonce + timestamp.
 * The body is not covered. Shared by the receiver (to verify) and the sender emulator (to sign).
 */
export function computeSignature(secret: string, nonce: string, timestamp: string): string {
  return createHash('sha1')
    .update(secret + nonce + timestamp, 'utf8')
    .digest('hex');
}
