// Runs of a task that callers ask for faster than it completes: one run at a time, and every
// call made while a run is in flight shares the single run queued after it. A caller's promise so
// settles with a run that began after its call (it sees the state as of then), and a burst of
// calls costs two runs, not one each.
export class Coalescer {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly task: () => Promise<void>) {}

  /** Nothing in flight or queued. */
  get idle(): boolean {
    return this.running === undefined && this.queued === undefined;
  }

  /** Settles as the run that begins after this call does. */
  run(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    this.queued = this.running.then(
      () => this.next(),
      () => this.next(),
    );
    return this.queued;
  }

  private next(): Promise<void> {
    this.queued = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    const run = this.task();
    this.running = run;
    const clear = () => {
      if (this.running === run) this.running = undefined;
    };
    run.then(clear, clear);
    return run;
  }
}
