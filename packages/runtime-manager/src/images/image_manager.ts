// Makes sure a container's image is present before it is created: applies the pull policy,
// backs off failed pulls per (pod, image), rate-limits registry pulls, serialises or bounds
// parallel pulls, and reports the kubelet's image reasons and events.

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
import { buildKeyring, lookupAuth, type RegistryAuth } from './pull_secrets.js';
import { type ImagePuller, newImagePuller } from './puller.js';
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
}

export class ImageManager<SandboxConfig = unknown> {
  readonly #puller: ImagePuller;
  readonly #limiter: TokenBucket;
  readonly #backoff: Backoff;
  readonly #recorder: EventRecorder | undefined;
  readonly #clock: Clock;

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
    if (policy === 'Never' || (policy === 'IfNotPresent' && present)) {
      if (present) {
        this.#event(pod, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
        return present;
      }
      const msg = `Container image "${image}" is not present with pull policy of Never`;
      this.#event(pod, 'Warning', ErrImageNeverPull, msg);
      throw new SyncStepError(ErrImageNeverPull, msg);
    }

    const key = `${pod.metadata?.uid ?? ''}_${image}`;
    if (this.#backoff.isInBackOffSinceUpdate(key)) {
      const msg = `Back-off pulling image "${image}"`;
      this.#event(pod, 'Normal', 'BackOff', msg);
      throw new SyncStepError(ErrImagePullBackOff, msg);
    }
    this.#event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
    const started = performance.now();
    try {
      const { ref, waitedMs } = await this.pull(image, pullSecrets, sandboxConfig);
      const total = performance.now() - started;
      this.#backoff.reset(key);
      this.#event(
        pod,
        'Normal',
        'Pulled',
        `Successfully pulled image "${image}" in ${Math.round(total - waitedMs)}ms (${Math.round(total)}ms including waiting)`,
      );
      return ref;
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
    return { ref: value, waitedMs };
  }

  /** Tries each matching credential in turn, or no credential when none match. */
  async #pullWithSecrets(image: string, secrets: V1Secret[], sandboxConfig?: SandboxConfig): Promise<string> {
    if (!this.#limiter.tryAccept()) throw new Error('pull QPS exceeded');
    const auths = lookupAuth(buildKeyring(secrets), image);
    if (auths.length === 0) return this.images.pullImage(image, undefined, sandboxConfig);
    const errors: string[] = [];
    for (const auth of auths) {
      try {
        return await this.images.pullImage(image, auth, sandboxConfig);
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new Error(errors.length === 1 ? errors[0]! : `all credentials failed: ${errors.join('; ')}`);
  }
}
