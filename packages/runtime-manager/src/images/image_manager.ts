// Makes sure a container's image is present before it is created: applies the pull policy,
// backs off failed pulls per (pod, image), rate-limits registry pulls, serialises or bounds
// parallel pulls, and reports the kubelet's image reasons and events. With a pull manager
// (KubeletEnsureSecretPulledImages), an image already present is used only by pods whose
// credentials the pull manager accepts; others pull it again, or fail under Never.

import { realClock } from '@kh/apimachinery';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Backoff, Clock, EventRecorder } from '../container/runtime.js';
import {
  ErrImageInspect,
  ErrImageNeverPull,
  ErrImagePull,
  ErrImagePullBackOff,
  ErrInvalidImageName,
  SyncStepError,
} from '../container/sync_result.js';
import { newImagePullBackoff } from '../util/backoff.js';
import { applyDefaultImageTag, pullPolicyOf } from './image_ref.js';
import { buildKeyring, lookupTrackedAuth, type RegistryAuth, type TrackedAuth } from './pull_secrets.js';
import { type ImagePuller, newImagePuller } from './puller.js';
import type { ImagePullManager } from './pullmanager/pull_manager.js';
import type { ImagePullCredentials } from './pullmanager/records.js';
import { TokenBucket } from './rate_limit.js';

/** The image calls the manager needs; the runtime manager implements them over CRI. */
export interface ImageService<SandboxConfig = unknown> {
  /** The image id when the image is present, undefined otherwise. */
  getImageRef(image: string): Promise<string | undefined>;
  pullImage(image: string, auth: RegistryAuth | undefined, sandboxConfig?: SandboxConfig): Promise<string>;
}

/** The outcome of an image presence check started ahead of ensureImageExists. */
export type ImagePresence = Promise<{ ref: string | undefined } | { error: unknown }>;

export interface ImageManagerOptions {
  /** Default true, like the kubelet. */
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  /** registryPullQPS, default 5; 0 means no limit. */
  registryPullQPS?: number;
  /** registryBurst, default 10. */
  registryBurst?: number;
  clock?: Clock;
  recorder?: EventRecorder;
  backoff?: Backoff;
  /** KubeletEnsureSecretPulledImages on: checks present images against the pod's credentials. */
  pullManager?: ImagePullManager;
}

/** The pull record of one credential: its secret, or the whole node for an anonymous pull. */
function pullCredentialsOf(used: TrackedAuth | undefined): ImagePullCredentials {
  if (!used) return { nodePodsAccessible: true };
  return { kubernetesSecrets: [{ ...used.source, credentialHash: used.credentialHash }] };
}

export class ImageManager<SandboxConfig = unknown> {
  readonly #puller: ImagePuller;
  readonly #limiter: TokenBucket;
  readonly #backoff: Backoff;
  readonly #recorder: EventRecorder | undefined;
  readonly #clock: Clock;
  readonly #pullManager: ImagePullManager | undefined;

  constructor(
    private readonly images: ImageService<SandboxConfig>,
    opts: ImageManagerOptions = {},
  ) {
    const clock = opts.clock ?? realClock;
    this.#clock = clock;
    this.#puller = newImagePuller({
      serializeImagePulls: opts.serializeImagePulls ?? true,
      maxParallelImagePulls: opts.maxParallelImagePulls,
    });
    this.#limiter = new TokenBucket(opts.registryPullQPS ?? 5, opts.registryBurst ?? 10, clock);
    this.#backoff = opts.backoff ?? newImagePullBackoff(clock);
    this.#recorder = opts.recorder;
    this.#pullManager = opts.pullManager;
  }

  #event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.#recorder?.event(pod, type, reason, message);
  }

  /**
   * Asks the runtime now whether `container`'s image is present, so that a later
   * ensureImageExists can take the answer instead of asking then (the runtime manager overlaps
   * it with sandbox creation). Undefined for a reference ensureImageExists rejects anyway.
   */
  checkPresence(container: V1Container): ImagePresence | undefined {
    let image: string;
    try {
      image = applyDefaultImageTag(container.image ?? '');
    } catch {
      return undefined;
    }
    return this.images.getImageRef(image).then(
      (ref) => ({ ref }),
      (error: unknown) => ({ error }),
    );
  }

  /**
   * Returns the image reference to create the container from, or throws a SyncStepError with an
   * image reason. `presence`, from checkPresence, stands in for the runtime's answer.
   */
  async ensureImageExists(
    pod: V1Pod,
    container: V1Container,
    pullSecrets: V1Secret[],
    sandboxConfig?: SandboxConfig,
    presence?: ImagePresence,
  ): Promise<string> {
    let image: string;
    try {
      image = applyDefaultImageTag(container.image ?? '');
    } catch (err) {
      const msg = `Failed to apply default image tag "${container.image ?? ''}": ${(err as Error).message}`;
      this.#event(pod, 'Warning', ErrInvalidImageName, msg);
      throw new SyncStepError(ErrInvalidImageName, msg, { cause: err });
    }
    const policy = pullPolicyOf(container);
    let present: string | undefined;
    try {
      const checked = presence ? await presence : { ref: await this.images.getImageRef(image) };
      if ('error' in checked) throw checked.error;
      present = checked.ref;
    } catch (err) {
      const msg = `Failed to inspect image "${image}": ${(err as Error).message}`;
      this.#event(pod, 'Warning', 'InspectFailed', msg);
      throw new SyncStepError(ErrImageInspect, msg, { cause: err });
    }
    if (policy !== 'Always' && present) {
      if (!this.#pullManager) {
        this.#event(pod, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
        return present;
      }
      const secrets = lookupTrackedAuth(buildKeyring(pullSecrets), image).map((t) => ({
        ...t.source,
        credentialHash: t.credentialHash,
      }));
      if (!(await this.#pullManager.mustAttemptImagePull(image, present, secrets))) {
        const msg = `Container image "${image}" already present on machine and can be accessed by the pod`;
        this.#event(pod, 'Normal', 'Pulled', msg);
        return present;
      }
    }
    if (policy === 'Never') {
      // Present but not for this pod's credentials reads the same as absent: the image's presence
      // is not revealed to a pod that may not use it.
      const msg = `Container image "${image}" is not present with pull policy of Never`;
      this.#event(pod, 'Warning', ErrImageNeverPull, msg);
      throw new SyncStepError(ErrImageNeverPull, msg);
    }

    try {
      await this.#pullManager?.recordPullIntent(image);
    } catch (err) {
      const msg = `Failed to record image pull intent for container image "${image}": ${(err as Error).message}`;
      throw new SyncStepError(ErrImagePull, msg, { cause: err });
    }
    let pulled: { ref: string; used: TrackedAuth | undefined } | undefined;
    try {
      pulled = await this.#pullWithBackoff(pod, image, pullSecrets, sandboxConfig);
      return pulled.ref;
    } finally {
      if (pulled)
        await this.#pullManager?.recordImagePulled(image, pulled.ref, pullCredentialsOf(pulled.used));
      else await this.#pullManager?.recordImagePullFailed(image);
    }
  }

  async #pullWithBackoff(
    pod: V1Pod,
    image: string,
    pullSecrets: V1Secret[],
    sandboxConfig: SandboxConfig | undefined,
  ): Promise<{ ref: string; used: TrackedAuth | undefined }> {
    const key = `${pod.metadata?.uid ?? ''}_${image}`;
    if (this.#backoff.isInBackOffSinceUpdate(key)) {
      const msg = `Back-off pulling image "${image}"`;
      this.#event(pod, 'Normal', 'BackOff', msg);
      throw new SyncStepError(ErrImagePullBackOff, msg);
    }
    this.#event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
    const started = performance.now();
    try {
      const { value, waitedMs } = await this.#puller.run(() =>
        this.#pullWithSecrets(image, pullSecrets, sandboxConfig),
      );
      const total = performance.now() - started;
      this.#backoff.reset(key);
      this.#event(
        pod,
        'Normal',
        'Pulled',
        `Successfully pulled image "${image}" in ${Math.round(total - waitedMs)}ms (${Math.round(total)}ms including waiting)`,
      );
      return value;
    } catch (err) {
      this.#backoff.next(key, this.#clock.now());
      const msg = `Failed to pull image "${image}": ${(err as Error).message}`;
      this.#event(pod, 'Warning', 'Failed', msg);
      throw new SyncStepError(ErrImagePull, msg, { cause: err });
    }
  }

  /**
   * Pulls now, whatever the policy, within the registry rate limit and the puller's concurrency,
   * trying matching pull secrets in turn. Returns the image ref and the time spent queued.
   */
  async pull(
    image: string,
    pullSecrets: V1Secret[],
    sandboxConfig?: SandboxConfig,
  ): Promise<{ ref: string; waitedMs: number }> {
    const { value, waitedMs } = await this.#puller.run(() =>
      this.#pullWithSecrets(image, pullSecrets, sandboxConfig),
    );
    return { ref: value.ref, waitedMs };
  }

  /** Tries each matching credential in turn, or no credential when none match; says which worked. */
  async #pullWithSecrets(
    image: string,
    secrets: V1Secret[],
    sandboxConfig?: SandboxConfig,
  ): Promise<{ ref: string; used: TrackedAuth | undefined }> {
    if (!this.#limiter.tryAccept()) throw new Error('pull QPS exceeded');
    const tracked = lookupTrackedAuth(buildKeyring(secrets), image);
    if (tracked.length === 0)
      return { ref: await this.images.pullImage(image, undefined, sandboxConfig), used: undefined };
    const errors: string[] = [];
    for (const t of tracked) {
      try {
        return { ref: await this.images.pullImage(image, t.auth, sandboxConfig), used: t };
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new Error(errors.length === 1 ? errors[0]! : `all credentials failed: ${errors.join('; ')}`);
  }
}
