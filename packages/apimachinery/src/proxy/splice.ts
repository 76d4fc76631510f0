// Splicing the two connections of a proxied upgrade (exec, attach, port-forward), as
// k8s.io/apimachinery/pkg/util/proxy's UpgradeAwareHandler copies a hijacked request to its
// backend: the API server to a kubelet, a kubelet to its runtime's streaming server.
import type { Duplex } from 'node:stream';

/** After one side is gone, how long the other gets to close once its output has gone out. */
export const SPLICE_CLOSE_GRACE_MS = 5_000;

/**
 * Pipes bytes both ways; an end is passed on as a half-close. When one side fails or closes, the
 * other is ended, not destroyed: what the gone side delivered (an exec's last output and its exit
 * status, just before a runtime closes) is still written out. Go's proxy gets this for free, its
 * writes return once the kernel has the bytes; here they may still wait in the stream's buffer,
 * which destroy() would drop. What the remaining side still sends is read and dropped, since a
 * socket closed with unread bytes resets its connection, and the peer then loses what it has
 * received but not yet read. It is destroyed if it has not closed `graceMs` after its output
 * went out.
 */
export function spliceConnections(a: Duplex, b: Duplex, graceMs = SPLICE_CLOSE_GRACE_MS): void {
  a.pipe(b);
  b.pipe(a);
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    // A failure always ends in 'close' (the streams destroy themselves on error).
    x.on('error', () => {});
    x.once('close', () => {
      y.unpipe(x);
      x.unpipe(y);
      if (y.destroyed) return;
      y.resume();
      y.end();
      // The countdown starts once the output has gone out: a slow reader is not cut off.
      const closeSoon = () => {
        const timer = setTimeout(() => y.destroy(), graceMs);
        timer.unref();
        y.once('close', () => clearTimeout(timer));
      };
      if (y.writableFinished) closeSoon();
      else y.once('finish', closeSoon);
    });
  }
}
