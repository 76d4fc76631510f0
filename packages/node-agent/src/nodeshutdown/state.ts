// The kubelet's graceful_node_shutdown_state file: when the last shutdown began and ended, kept
// in the kubelet's root directory across the reboot for the graceful shutdown metrics.
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCAL_STORAGE_STATE_FILE = 'graceful_node_shutdown_state';

/** Go's zero time.Time, which an unset endTime marshals to. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

export interface ShutdownState {
  startTime: Date;
  endTime?: Date;
}

export function stateFilePath(rootDir: string): string {
  return join(rootDir, LOCAL_STORAGE_STATE_FILE);
}

/** Writes the state as the kubelet's JSON, atomically (a temporary file renamed over it). */
export async function storeState(path: string, state: ShutdownState): Promise<void> {
  const body = JSON.stringify({
    startTime: state.startTime.toISOString(),
    endTime: state.endTime ? state.endTime.toISOString() : GO_ZERO_TIME,
  });
  const tmp = `${path}.tmp`;
  await writeFile(tmp, body, { mode: 0o644 });
  await rename(tmp, path);
}
