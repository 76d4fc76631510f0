// Which runs may have left containers behind. A run writes its id here before it creates anything
// and deletes it after its final sweep; a record whose process is gone (a crash, a kill -9, a
// second Ctrl-C) marks leftovers that the next run removes first. Only the harness's own runs are
// touched: other kh-labelled objects (test suites running at the same time) are not ours to remove.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunRecord {
  runId: string;
  pid: number;
  startedAt: string;
}

export type RemoveRun = (runId: string) => Promise<unknown>;

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export class RunLedger {
  constructor(readonly dir = process.env.KH_STATE_DIR ?? join(tmpdir(), 'kubelet-harness', 'runs')) {}

  async begin(runId: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const record: RunRecord = { runId, pid: process.pid, startedAt: new Date().toISOString() };
    await writeFile(join(this.dir, `${runId}.json`), `${JSON.stringify(record)}\n`);
  }

  async end(runId: string): Promise<void> {
    await rm(join(this.dir, `${runId}.json`), { force: true });
  }

  /** Records of runs whose process is gone. */
  async abandoned(): Promise<RunRecord[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const out: RunRecord[] = [];
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      try {
        const r = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as RunRecord;
        if (!alive(r.pid)) out.push(r);
      } catch {
        // A torn write from a crash: the id is the file name.
        out.push({ runId: name.slice(0, -'.json'.length), pid: 0, startedAt: '' });
      }
    }
    return out;
  }

  /** Removes what abandoned runs left behind, then forgets them; returns their ids. */
  async removeAbandoned(remove: RemoveRun): Promise<string[]> {
    const ids: string[] = [];
    for (const r of await this.abandoned()) {
      await remove(r.runId);
      await this.end(r.runId);
      ids.push(r.runId);
    }
    return ids;
  }
}
