import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { toJUnit } from './junit.js';
import type { RunResults } from './model.js';

/** Writes results.json and junit.xml into `dir`; returns their paths. */
export async function writeResults(
  dir: string,
  results: RunResults,
): Promise<{ json: string; junit: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'results.json');
  const junit = join(dir, 'junit.xml');
  await writeFile(json, `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(junit, toJUnit(results));
  return { json, junit };
}
