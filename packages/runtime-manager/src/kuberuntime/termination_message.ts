// The termination message of an exited container: the file the container wrote at its
// terminationMessagePath (a host file the manager bind-mounted there), or, with
// FallbackToLogsOnError and a non-zero exit, the tail of its log.
import { open } from 'node:fs/promises';
import { parseCriLog, readTail } from './logs.js';

/** Cap on a message read from terminationMessagePath (the API's 4 KiB limit). */
export const MaxTerminationMessageBytes = 4096;
/** Cap on a message taken from logs: the last 80 lines, at most 2 KiB. */
export const MaxTerminationMessageLogLines = 80;
export const MaxTerminationMessageLogBytes = 2048;

async function readHead(path: string, max: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(max);
    const { bytesRead } = await fh.read(buf, 0, max, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * Last `maxLines` lines of a CRI log as the container wrote them (a last line without its newline
 * stays without), trimmed to the last `maxBytes` bytes.
 */
export function tailLogMessage(
  text: string,
  maxLines = MaxTerminationMessageLogLines,
  maxBytes = MaxTerminationMessageLogBytes,
): string {
  const lines = parseCriLog(text, { newlines: true }).slice(-maxLines);
  const joined = Buffer.from(lines.join(''), 'utf8');
  return joined.subarray(Math.max(0, joined.length - maxBytes)).toString('utf8');
}

export interface TerminationMessageSource {
  /** terminationMessagePath as annotated on the container. */
  path: string;
  policy: string;
  exitCode: number;
  /** The container's mounts as the runtime reports them. */
  mounts: { containerPath: string; hostPath: string }[];
  logPath?: string;
}

/** Reads the message per policy. Failures to read become the message, as in the kubelet. */
export async function readTerminationMessage(src: TerminationMessageSource): Promise<string> {
  const fallbackToLogs = src.policy === 'FallbackToLogsOnError' && src.exitCode !== 0;
  let checkLogs = fallbackToLogs;
  let message = '';
  if (src.path) {
    const mount = src.mounts.find((m) => m.containerPath === src.path);
    if (mount) {
      try {
        message = (await readHead(mount.hostPath, MaxTerminationMessageBytes)).toString('utf8');
        checkLogs = fallbackToLogs && message.length === 0;
      } catch (err) {
        return `Error on reading termination log ${src.path}: ${(err as Error).message}`;
      }
    }
  }
  if (checkLogs && src.logPath) {
    try {
      // Read enough raw bytes for 80 short lines; CRI line prefixes are ~40 bytes each.
      const raw = await readTail(src.logPath, 64 * 1024);
      return tailLogMessage(raw.toString('utf8'));
    } catch (err) {
      return `Error on reading termination message from logs: ${(err as Error).message}`;
    }
  }
  return message;
}
