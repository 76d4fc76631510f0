import type { KObject } from '../meta/object.js';

const cache = new WeakMap<object, Buffer>();

/**
 * Stored objects' bytes are cut from slabs of their own: in Node's shared Buffer pool they sat
 * between short-lived buffers (watch lines), and each kept its whole 8 KiB slab alive.
 */
const SLAB_BYTES = 32 * 1024;
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let used = 0;

function bytesOf(text: string): Buffer {
  const size = Buffer.byteLength(text);
  if (size > SLAB_BYTES / 4) {
    const own = Buffer.allocUnsafeSlow(size);
    own.write(text);
    return own;
  }
  if (used + size > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    used = 0;
  }
  const b = slab.subarray(used, used + slab.write(text, used));
  used += size;
  return b;
}

/**
 * An object's JSON as UTF-8 bytes, made once. Stored objects are never mutated, so the bytes made
 * when one is written serve its write response, the watch events of every watcher, the log record
 * and every later LIST or GET, which copy them instead of serialising again (kube-apiserver's
 * watch cache keeps each object's encoding the same way). Only for objects nobody mutates
 * afterwards.
 */
export function toBytes(obj: KObject): Buffer {
  let b = cache.get(obj);
  if (b === undefined) {
    b = bytesOf(JSON.stringify(obj));
    cache.set(obj, b);
  }
  return b;
}
