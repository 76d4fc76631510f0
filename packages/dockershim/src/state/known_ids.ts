import type { ContainerType } from '../model/labels.js';

const MAX_ENTRIES = 50_000;

/**
 * Full Docker ids the shim has created or inspected, with their CRI kind. A container's labels never
 * change and Docker never reuses an id, so an entry stays true for as long as the container exists.
 * Stop and remove calls on a known id go straight to Docker without an inspect first: for one removed
 * behind the shim's back Docker answers 404, which they take as "already gone". Entries leave when
 * the shim removes the container; the oldest make room beyond MAX_ENTRIES (those removed by others).
 */
export class KnownIds {
  private readonly kinds = new Map<string, ContainerType>();

  kindOf(id: string): ContainerType | undefined {
    return this.kinds.get(id);
  }

  add(id: string, kind: ContainerType): void {
    if (this.kinds.size >= MAX_ENTRIES && !this.kinds.has(id)) {
      const oldest = this.kinds.keys().next().value;
      if (oldest !== undefined) this.kinds.delete(oldest);
    }
    this.kinds.set(id, kind);
  }

  forget(id: string): void {
    this.kinds.delete(id);
  }
}
