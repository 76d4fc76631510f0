/** Receives one human-readable progress line at a time (no trailing newline). */
export type Progress = (line: string) => void;

export const silent: Progress = () => {};

/** Runs `fn`, announcing it and reporting how long it took, so slow steps are visible. */
export async function timed<T>(progress: Progress, label: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  progress(`${label} ...`);
  const result = await fn();
  progress(`${label} done in ${formatSeconds(performance.now() - started)}`);
  return result;
}

export function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
