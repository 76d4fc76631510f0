import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pkgDir, runBuf } from './helpers.js';

// Regenerates the CRI code into a temp dir and compares it with the committed src/gen,
// so an edited api.proto or buf.gen.yaml without `npm run generate` fails CI.

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries) {
    const rel = path.join(prefix, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

describe('generated CRI code', () => {
  it('src/gen matches a fresh `buf generate` of proto/', async () => {
    const outBase = await mkdtemp(path.join(tmpdir(), 'kh-cri-gen-'));
    try {
      await runBuf(['generate', '-o', outBase]);
      const committedDir = path.join(pkgDir, 'src/gen');
      const freshDir = path.join(outBase, 'src/gen');
      const committed = await listFiles(committedDir);
      const fresh = await listFiles(freshDir);
      const stale: string[] = [];
      for (const f of new Set([...committed, ...fresh])) {
        const a = await readFile(path.join(committedDir, f), 'utf8').catch(() => '<missing>');
        const b = await readFile(path.join(freshDir, f), 'utf8').catch(() => '<missing>');
        if (a !== b) stale.push(`src/gen/${f}`);
      }
      expect(
        stale,
        `generated code is stale (${stale.join(', ')}): run \`npm run generate -w @kh/cri-api\` and commit`,
      ).toEqual([]);
    } finally {
      await rm(outBase, { recursive: true, force: true });
    }
  });
});
