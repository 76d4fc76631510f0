import { createHash } from 'node:crypto';

/** The fake's content digest of a text: image ids and repo digests are derived from the reference. */
export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
