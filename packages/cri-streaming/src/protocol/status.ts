// Kubernetes metav1.Status objects: the error bodies of refused upgrades (Go clients decode them
// into StatusError) and what the v4/v5 error stream carries when a command ends.
import { CriError, GrpcStatus } from '@kh/cri-api';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { causes?: StatusCause[] };
  code?: number;
}

/** The reason client-go's v4 error decoder looks for, and the cause carrying the exit code. */
export const NON_ZERO_EXIT_CODE_REASON = 'NonZeroExitCode';
export const EXIT_CODE_CAUSE = 'ExitCode';

export function successStatus(): KubeStatus {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' };
}

export function failureStatus(code: number, reason: string, message: string): KubeStatus {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

export function nonZeroExitStatus(exitCode: number): KubeStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: exit status ${exitCode}`,
    reason: NON_ZERO_EXIT_CODE_REASON,
    details: { causes: [{ reason: EXIT_CODE_CAUSE, message: String(exitCode) }] },
  };
}

/**
 * The Status for a failed runtime call: NotFound and the client's own mistakes keep their
 * meaning, anything else is the runtime's (500 InternalError). `what` says what failed,
 * e.g. "error executing command in container".
 */
export function statusForError(err: unknown, what: string): KubeStatus {
  // A Status a peer sent (a proxied session's refusal or failure) is passed on as it came.
  const relayed = (err as { status?: unknown } | undefined)?.status;
  if ((relayed as KubeStatus | undefined)?.kind === 'Status') return relayed as KubeStatus;
  const message = `${what}: ${err instanceof CriError ? err.details : err instanceof Error ? err.message : String(err)}`;
  if (err instanceof CriError) {
    switch (err.code) {
      case GrpcStatus.NOT_FOUND:
        return failureStatus(404, 'NotFound', message);
      case GrpcStatus.INVALID_ARGUMENT:
      case GrpcStatus.FAILED_PRECONDITION:
      case GrpcStatus.OUT_OF_RANGE:
        return failureStatus(400, 'BadRequest', message);
      case GrpcStatus.PERMISSION_DENIED:
        return failureStatus(403, 'Forbidden', message);
      case GrpcStatus.DEADLINE_EXCEEDED:
        return failureStatus(504, 'Timeout', message);
      case GrpcStatus.UNAVAILABLE:
        return failureStatus(503, 'ServiceUnavailable', message);
    }
  }
  return failureStatus(500, 'InternalError', message);
}

/** The Status for a request that is not an upgrade this server speaks. */
export function upgradeRequired(): KubeStatus {
  return failureStatus(
    400,
    'BadRequest',
    'unable to upgrade: streaming requires "Connection: Upgrade" with "Upgrade: SPDY/3.1" ' +
      '(and X-Stream-Protocol-Version) or "Upgrade: websocket" (and Sec-WebSocket-Protocol)',
  );
}
