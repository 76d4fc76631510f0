import type { KObject } from '../meta/object.js';

const cache = new WeakMap<object, string>();

/**
 * An object's JSON, computed once. Stored objects are never mutated, so the text made when one
 * is written serves its write response, the watch events of every watcher, the log record and
 * every later LIST or GET (at 150 000 pods, a LIST was mostly JSON.stringify). Only for objects
 * nobody mutates afterwards.
 */
export function toJson(obj: KObject): string {
  let s = cache.get(obj);
  if (s === undefined) {
    s = JSON.stringify(obj);
    cache.set(obj, s);
  }
  return s;
}
