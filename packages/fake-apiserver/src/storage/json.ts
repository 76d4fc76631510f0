import type { KObject } from '../meta/object.js';

const cache = new WeakMap<object, Buffer>();

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
    b = Buffer.from(JSON.stringify(obj));
    cache.set(obj, b);
  }
  return b;
}
