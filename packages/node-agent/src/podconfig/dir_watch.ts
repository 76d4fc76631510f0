// The kubelet's file source also watches the manifest directory (inotify, file_linux.go) so that a
// manifest written, changed or removed is seen at once rather than at the next fileCheckFrequency
// poll. This keeps one watch on a directory and calls back on every change in it, with the kind
// (Node's 'rename' for an inotify create, delete or move; 'change' for a write) and the file name;
// a directory that does not exist yet (or a watch that fails) is retried by calling ensure()
// again, which the source does on every poll.
import { type FSWatcher, watch } from 'node:fs';

export class DirectoryWatch {
  private watcher: FSWatcher | undefined;

  constructor(
    private readonly path: string,
    private readonly onChange: (kind: string, file: string | null) => void,
  ) {}

  /** Starts the watch when none runs; true when one runs after the call. */
  ensure(): boolean {
    if (this.watcher) return true;
    try {
      const w = watch(this.path, { persistent: false }, (kind, file) => this.onChange(kind, file));
      // Removed directory or lost watch: drop it, the next ensure() starts another.
      w.on('error', () => this.close(w));
      this.watcher = w;
      return true;
    } catch {
      return false;
    }
  }

  close(which = this.watcher): void {
    which?.close();
    if (this.watcher === which) this.watcher = undefined;
  }
}
