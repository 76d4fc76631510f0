// The connection from the kubelet's streaming proxy to the runtime's streaming server.
import { Socket } from 'node:net';

/** Write failures that only mean the runtime has closed or reset the connection. */
const PEER_GONE = new Set(['EPIPE', 'ECONNRESET']);

/**
 * A socket that keeps reading after a write to it failed because the peer is gone. A runtime's
 * streaming server writes an exec's last output and exit status and closes at once; frames the
 * client sent meanwhile (stdin, a resize) arrive unread, so its close is a reset, and the proxy's
 * next write fails. A net.Socket destroys itself on that failure and closes its descriptor with
 * the runtime's last frames still unread in the kernel: kubectl then gets no status (exit 0, no
 * output). Here such a write is dropped instead: reading goes on, the frames come out, and the
 * reset or the end that follows them closes the socket. Go's proxy reads them in its own
 * goroutine, unaffected by the writer's failure.
 */
export class RuntimeStreamSocket extends Socket {
  override _write(chunk: Buffer, encoding: BufferEncoding, cb: (error?: Error | null) => void): void {
    super._write(chunk, encoding, ignorePeerGone(cb));
  }

  override _writev(
    chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>,
    cb: (error?: Error | null) => void,
  ): void {
    super._writev!(chunks, ignorePeerGone(cb));
  }
}

const ignorePeerGone =
  (cb: (error?: Error | null) => void) =>
  (err?: Error | null): void =>
    cb(err && PEER_GONE.has((err as NodeJS.ErrnoException).code ?? '') ? null : err);
