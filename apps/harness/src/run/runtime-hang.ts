// A runtime that answers Version but hangs on everything else (dockerd 20.10.24's libnetwork
// deadlock: `/version` answers, `/_ping` and network calls never return) fails a cell with a wait
// that timed out somewhere in a scenario, which says nothing about the cause. After a failed cell
// the harness asks the runtime itself; a hang is named as such, with the runtime's own goroutine
// dump in the cell's logs.
import { existsSync } from 'node:fs';
import { CriClient, CriError, GrpcStatus } from '@kh/cri-api';
import type { StartedBackend } from '../backends/types.js';

/** Version is cheap everywhere; a runtime that cannot answer it in this time is down, not hung. */
const VERSION_DEADLINE_MS = 5_000;
/**
 * Status is what the agent asks every few seconds; the kubelet's runtime health check gives it the
 * runtime request timeout (2 min), but a healthy runtime answers in milliseconds even under load.
 */
const STATUS_DEADLINE_MS = 10_000;

export interface RuntimeHang {
  /** `runtime hung: …`, the cell's failure reason. */
  reason: string;
  /** The runtime's goroutine stacks, when the backend can dump them. */
  stacks?: string[];
}

/** Undefined when the runtime answers (or is plainly down, which the cell's own reason says). */
export async function detectRuntimeHang(
  started: Pick<StartedBackend, 'hostCriEndpoint' | 'dumpRuntimeStacks'>,
  deadlines = { versionMs: VERSION_DEADLINE_MS, statusMs: STATUS_DEADLINE_MS },
): Promise<RuntimeHang | undefined> {
  const socket = /^unix:\/\/(.*)$/.exec(started.hostCriEndpoint)?.[1];
  // No socket: the runtime (or its shim) is gone, which is down rather than hung.
  if (socket !== undefined && !existsSync(socket)) return undefined;
  let client: CriClient | undefined;
  try {
    client = await CriClient.connect(started.hostCriEndpoint, { connectTimeoutMs: deadlines.versionMs });
    const version = await client.version({}, { timeoutMs: deadlines.versionMs });
    try {
      await client.status({}, { timeoutMs: deadlines.statusMs });
      return undefined;
    } catch (err) {
      if (!(err instanceof CriError) || err.code !== GrpcStatus.DEADLINE_EXCEEDED) return undefined;
    }
    const reason =
      `runtime hung: CRI Version answers (${version.runtimeName} ${version.runtimeVersion}) ` +
      `but Status did not answer within ${deadlines.statusMs / 1000} s`;
    const stacks = await started
      .dumpRuntimeStacks?.()
      .catch((err: unknown) => [`(goroutine dump failed: ${(err as Error).message})`]);
    return {
      reason: stacks ? `${reason}; its goroutine dump is in the cell's logs` : reason,
      ...(stacks ? { stacks } : {}),
    };
  } catch {
    return undefined;
  } finally {
    client?.close();
  }
}
