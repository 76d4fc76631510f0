// `kubelet-harness merge a/results.json b/results.json … --out dir`: the parts of a sharded run
// as one results.json, junit.xml and report.html.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readResultsFile } from '../results/load.js';
import { MergeError, mergeResults } from '../results/merge.js';
import { writeResults } from '../results/writer.js';
import { generateReport } from './cli.js';
import { DEFAULT_THRESHOLDS } from './compare.js';

export const MERGE_USAGE = `Usage: kubelet-harness merge <results.json>... --out <dir> [--force]

Merges the results of sharded runs (run --shard i/n) into one results.json, junit.xml and
report.html in <dir>. A cell that no part ran, or that several parts ran, is reported; a missing
cell is recorded as failed. Results from different commits are refused unless --force.

Exit status: 0 merged, 1 merged with missing or duplicate cells, 2 bad arguments, unreadable
input, or different commits without --force.`;

export interface MergeCommandIO {
  out: (s: string) => void;
  err: (s: string) => void;
}

export async function runMergeCommand(argv: string[], io: MergeCommandIO): Promise<number> {
  let values: { out?: string; force?: boolean; help?: boolean };
  let inputs: string[];
  try {
    ({ values, positionals: inputs } = parseArgs({
      args: argv,
      options: {
        out: { type: 'string', short: 'o' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    }));
    if (values.help) {
      io.out(`${MERGE_USAGE}\n`);
      return 0;
    }
    if (!values.out) throw new Error('--out <dir> is required');
    if (inputs.length === 0) throw new Error('name at least one results.json');
  } catch (err) {
    io.err(`kubelet-harness merge: ${(err as Error).message}\n\n${MERGE_USAGE}\n`);
    return 2;
  }
  try {
    const parts = await Promise.all(inputs.map((p) => readResultsFile(p)));
    const { results, duplicates, missing } = mergeResults(parts, { force: values.force ?? false });
    if (new Set(parts.map((p) => p.commit)).size > 1)
      io.err(`kubelet-harness merge: warning: merging results of different commits (--force)\n`);
    const files = await writeResults(values.out, results);
    const html = join(values.out, 'report.html');
    const { html: page } = await generateReport({
      input: files.json,
      out: html,
      serve: false,
      port: 0,
      ...DEFAULT_THRESHOLDS,
      failOnRegression: false,
    });
    await writeFile(html, page);
    for (const d of duplicates) io.err(`duplicate cell ${d}: kept the first file's\n`);
    for (const m of missing) io.err(`missing cell ${m}: no file ran it; recorded as failed\n`);
    io.out(
      `merged ${parts.length} files, ${results.cells.length} cells (${missing.length} missing, ${duplicates.length} duplicate): ${files.json}, ${files.junit}, ${html}\n`,
    );
    return missing.length + duplicates.length > 0 ? 1 : 0;
  } catch (err) {
    io.err(`kubelet-harness merge: ${(err as Error).message}\n`);
    return err instanceof MergeError || (err as Error).name === 'ResultsFileError' ? 2 : 1;
  }
}
