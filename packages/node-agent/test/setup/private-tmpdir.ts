// The tests make many temp dirs (configs, kubeconfigs, PKI, fake host roots) and some outlive
// their test on purpose, for the process that reads them. Pointing TMPDIR at one directory per
// run, removed at the end, keeps the machine's temp dir clean however a test ends. Workers are
// started after this runs, so they and every process they spawn inherit it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'kh-node-agent-tests-'));
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
