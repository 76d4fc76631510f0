import { type Progress, silent } from '../util/progress.js';

/**
 * What NodeContainer and HostContainerd are both told before start(): the images their runtime
 * starts with, its pause image and how long it may take to answer CRI.
 */
export abstract class RuntimeBuilder {
  protected pauseImage?: string;
  protected readonly images: string[] = [];
  protected progress: Progress = silent;

  constructor(protected readyTimeoutMs: number) {}

  /** Host engine images to load into the runtime once it is ready: names, lists of names or both. */
  withImages(...refs: (string | readonly string[])[]): this {
    this.images.push(...refs.flat());
    return this;
  }

  /** The sandbox (pause) image (default: the local pause recipe, built if missing). */
  withPauseImage(ref: string): this {
    this.pauseImage = ref;
    return this;
  }

  withReadyTimeout(ms: number): this {
    this.readyTimeoutMs = ms;
    return this;
  }

  withProgress(progress: Progress): this {
    this.progress = progress;
    return this;
  }
}
