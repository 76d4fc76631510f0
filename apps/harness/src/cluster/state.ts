// What `kubelet-harness up` leaves for `down`: the world's run id (every container, network and
// volume carries it as kh.run) and the kubeconfig it wrote. Kept apart from the run ledger on
// purpose: the ledger sweeps runs whose process is gone, and an `up` world outlives its process.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface ClusterState {
  runId: string;
  runtimes: string[];
  kubeconfig: string;
  nodes: string[];
  images: Record<string, string>;
  createdAt: string;
}

export const defaultClusterDir = (): string =>
  process.env.KH_CLUSTER_DIR ?? join(tmpdir(), 'kubelet-harness', 'cluster');

export class ClusterStateFile {
  readonly path: string;

  constructor(readonly dir = defaultClusterDir()) {
    this.path = join(dir, 'state.json');
  }

  async read(): Promise<ClusterState | undefined> {
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as ClusterState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`unreadable cluster state ${this.path}: ${(err as Error).message}`);
    }
  }

  async write(state: ClusterState): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    await writeFile(this.path, `${JSON.stringify(state, null, 2)}\n`);
  }

  async remove(): Promise<void> {
    await rm(this.path, { force: true });
  }
}
