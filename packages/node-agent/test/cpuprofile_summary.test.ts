// scripts/cpuprofile_summary.mjs maps a CPU profile of a minified bundle back to source files
// and functions through the bundle's source map.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { summarize } from '../scripts/cpuprofile_summary.mjs';

const dir = mkdtempSync(join(tmpdir(), 'kh-cpuprofile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('attributes samples to original files and functions, and leaves out stopped time', async () => {
  writeFileSync(
    join(dir, 'busy.js'),
    'export function spin() {\n  let x = 0;\n  for (let i = 0; i < 9; i++) x += i;\n  return x;\n}\n',
  );
  writeFileSync(
    join(dir, 'main.js'),
    "import { spin } from './busy.js';\nexport function main() {\n  return spin() + 1;\n}\nmain();\n",
  );
  const out = await build({
    entryPoints: [join(dir, 'main.js')],
    bundle: true,
    format: 'esm',
    minifyWhitespace: true,
    sourcemap: 'external',
    write: false,
    outdir: join(dir, 'out'),
    outExtension: { '.js': '.mjs' },
  });
  const js = out.outputFiles.find((f) => f.path.endsWith('.mjs'))?.text ?? '';
  const map = JSON.parse(out.outputFiles.find((f) => f.path.endsWith('.map'))?.text ?? '{}');
  // The bundle is one line; a frame's position is where its function's body starts.
  const at = (needle: string) => ({ lineNumber: 0, columnNumber: js.indexOf(needle) });
  const url = `file://${join(dir, 'out', 'main.mjs')}`;
  const frame = (id: number, functionName: string, pos = { lineNumber: -1, columnNumber: -1 }) => ({
    id,
    callFrame: { functionName, url: pos.lineNumber >= 0 ? url : '', scriptId: '1', ...pos },
  });
  const profile = {
    nodes: [
      frame(1, '(root)'),
      frame(2, '(idle)'),
      frame(3, 'spin', at('let x=0')),
      frame(4, 'main', at('return spin()')),
      frame(5, '(garbage collector)'),
    ],
    samples: [3, 3, 4, 2, 5, 3],
    timeDeltas: [4_000, 6_000, 2_000, 7_000, 1_000, 5_000_000],
  };
  const s = summarize(profile, map);
  expect(s.busyMs).toBe(13);
  expect(s.idleMs).toBe(7);
  const areas = new Map<string, number>(s.byArea);
  expect([...areas].find(([k]) => k.endsWith('busy.js'))?.[1]).toBe(10);
  expect([...areas].find(([k]) => k.endsWith('main.js'))?.[1]).toBe(2);
  expect(areas.get('(garbage collector)')).toBe(1);
  const fns = new Map<string, number>(s.byFunction);
  expect([...fns].find(([k]) => k.startsWith('spin ') && k.endsWith('busy.js:2'))?.[1]).toBe(10);
  expect([...fns].find(([k]) => k.startsWith('main ') && k.endsWith('main.js:3'))?.[1]).toBe(2);
});
