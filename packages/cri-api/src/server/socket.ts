import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

/** Resolves true if something accepts a connection on the unix socket at `socketPath`. */
function socketAnswers(socketPath: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ path: socketPath });
    const done = (answered: boolean) => {
      sock.destroy();
      resolve(answered);
    };
    sock.setTimeout(timeoutMs, () => done(true)); // accepted but silent still counts as live
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/**
 * Makes `socketPath` bindable: creates its directory and removes a stale socket file left by a
 * process that died. A socket somebody still answers on, or a path that is not a socket, is never
 * touched: that is an error, so two servers cannot silently steal each other's endpoint.
 */
export async function prepareSocketPath(socketPath: string): Promise<void> {
  await mkdir(path.dirname(socketPath), { recursive: true });
  const st = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) return;
  if (!st.isSocket()) {
    throw new Error(`cannot listen on ${socketPath}: the path exists and is not a socket`);
  }
  if (await socketAnswers(socketPath)) {
    throw new Error(`cannot listen on ${socketPath}: another server is already listening there`);
  }
  await unlink(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** CRI sockets are group-accessible only (like containerd's), never world-writable. */
export const SOCKET_MODE = 0o660;

export async function restrictSocket(socketPath: string): Promise<void> {
  await chmod(socketPath, SOCKET_MODE);
}

export async function removeSocket(socketPath: string): Promise<void> {
  await unlink(socketPath).catch(() => {});
}
