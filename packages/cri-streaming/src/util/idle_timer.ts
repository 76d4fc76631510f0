// The idle timeout of a streaming session, whatever carries it (SPDY or a WebSocket): every sign of
// life pushes it back, and it never keeps the process alive.

export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `ms` <= 0 (or undefined) means no timeout. */
  constructor(
    private readonly ms: number | undefined,
    private readonly onIdle: (ms: number) => void,
  ) {}

  /** Restarts the countdown; a no-op once stopped. */
  touch(): void {
    const ms = this.ms ?? 0;
    if (ms <= 0 || this.stopped) return;
    if (this.timer) this.timer.refresh();
    else {
      this.timer = setTimeout(() => this.onIdle(ms), ms);
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
