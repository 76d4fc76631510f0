const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const TEARDOWN_TIMEOUT_MS = 60_000;

const pending = new Set<() => Promise<void>>();
const exit = process.exit.bind(process);
let interrupted = false;

function onSignal(signal: NodeJS.Signals): void {
  if (interrupted) {
    process.stderr.write(`${signal} again: exiting without clean-up\n`);
    exit(130);
  }
  interrupted = true;
  process.stderr.write(`${signal}: cleaning up before exiting (again to exit at once)\n`);
  // The interrupted work fails as its connections close, and its error path exits the process:
  // that exit must wait for the teardown, or the teardown is cut short half-way.
  process.exit = (() => undefined) as typeof process.exit;
  // Newest first: what was started last may depend on what was started before it.
  const teardowns = [...pending].reverse();
  const all = (async () => {
    for (const t of teardowns)
      await t().catch((err: unknown) => process.stderr.write(`clean-up: ${String(err)}\n`));
  })();
  const timeout = new Promise((r) => setTimeout(r, TEARDOWN_TIMEOUT_MS).unref());
  void Promise.race([all, timeout]).then(() => exit(130));
}

/**
 * Makes `teardown` run also if the process is interrupted (SIGINT, SIGTERM, SIGHUP: Ctrl-C, or turbo
 * stopping its tasks), then exit 130. A benchmark or script that owns containers or processes wraps
 * their teardown when it starts them and calls the result in its `finally`: the teardown runs once,
 * whichever comes first, and an interrupted run leaves nothing behind. Teardowns run newest first,
 * for at most a minute; a second signal exits at once.
 */
export function cleanUpOnInterrupt(teardown: () => Promise<unknown>): () => Promise<void> {
  let running: Promise<void> | undefined;
  const once = () => {
    running ??= teardown().then(() => undefined);
    return running;
  };
  if (pending.size === 0) for (const s of SIGNALS) process.on(s, onSignal);
  pending.add(once);
  return () => {
    pending.delete(once);
    if (pending.size === 0 && !interrupted) for (const s of SIGNALS) process.off(s, onSignal);
    return once();
  };
}
