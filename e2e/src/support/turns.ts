// Cases of one cell that each change the node (stop or reconfigure its agent, shut it down) take
// turns, as Ginkgo runs Serial specs one after another; the harness otherwise runs a cell's
// cases side by side.

export interface Turns {
  /** Runs `body` once every earlier case's body has ended. */
  take<T>(body: () => Promise<T>): Promise<T>;
}

export function turns(): Turns {
  let tail: Promise<unknown> = Promise.resolve();
  return {
    take(body) {
      const run = tail.then(body, body);
      tail = run.catch(() => undefined);
      return run;
    },
  };
}
