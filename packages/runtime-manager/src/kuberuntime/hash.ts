// Container spec hash. Like current kubelets, only the fields a pod update may change (the
// image) and the name are hashed: hashing the whole spec would restart adopted containers
// whenever API defaulting adds a field the previous agent did not see.
import type { V1Container } from '@kubernetes/client-node';

/** 32-bit FNV-1a over the UTF-8 bytes of `text`. */
export function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Hex hash stored in the io.kubernetes.container.hash annotation. */
export function hashContainer(container: Pick<V1Container, 'name' | 'image'>): string {
  // Keys in sorted order, so the text is stable regardless of how the object was built.
  return fnv32a(JSON.stringify({ image: container.image ?? '', name: container.name })).toString(16);
}
