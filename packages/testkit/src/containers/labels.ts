import { randomBytes } from 'node:crypto';

export const RUN_LABEL = 'kh.run';
export const OWNER_LABEL = 'kh.owner';
export const ROLE_LABEL = 'kh.role';

/**
 * The id that labels everything this process creates. KH_RUN_ID lets a harness run and the
 * processes it starts share one id; otherwise each process gets its own.
 */
export const runId: string = process.env.KH_RUN_ID || randomBytes(4).toString('hex');

/** Labels for anything a test creates, so removeLeftovers can find it after a crash. */
export function khLabels(role: string, extra: Record<string, string> = {}): Record<string, string> {
  return { [RUN_LABEL]: runId, [OWNER_LABEL]: 'test', [ROLE_LABEL]: role, ...extra };
}

export function uniqueName(role: string): string {
  return `kh-${runId}-${role}-${randomBytes(3).toString('hex')}`;
}
