// Reasons a sync step fails with, raised by kuberuntime/ and images/ alike. They surface as
// container waiting reasons and events, so they keep the kubelet's spelling exactly.
import type { SyncStepResult } from './runtime.js';

export const ErrCrashLoopBackOff = 'CrashLoopBackOff';
export const ErrCreatePodSandbox = 'CreatePodSandboxError';
export const ErrConfigPodSandbox = 'ConfigPodSandboxError';
export const ErrKillPodSandbox = 'KillPodSandboxError';
export const ErrKillContainer = 'KillContainerError';
export const ErrResizePodInPlace = 'ResizePodInPlaceError';
export const ErrRunInitContainer = 'RunInitContainerError';
export const ErrCreateContainerConfig = 'CreateContainerConfigError';
export const ErrCreateContainer = 'CreateContainerError';
export const ErrRunContainer = 'RunContainerError';
export const ErrPostStartHook = 'PostStartHookError';

export const ErrImagePull = 'ErrImagePull';
export const ErrImagePullBackOff = 'ImagePullBackOff';
export const ErrImageNeverPull = 'ErrImageNeverPull';
export const ErrInvalidImageName = 'InvalidImageName';
export const ErrImageInspect = 'ImageInspectError';

/** A failed step with its reason (one of the constants above) and a message for the pod status. */
export class SyncStepError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SyncStepError';
  }
}

/** Marks the step failed with `reason`; the message is the error's, after `prefix`. */
export function failStep(step: SyncStepResult, reason: string, err: unknown, prefix = ''): void {
  const e = err as Error;
  step.error = e;
  step.reason = reason;
  step.message = prefix + (err instanceof SyncStepError ? e.message : (e.message ?? String(err)));
}

/** Go-style duration text ("10s", "1m20s", "5m0s"), as the kubelet prints backoff delays. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60}s`;
  return `${Math.floor(m / 60)}h${m % 60}m${s % 60}s`;
}
