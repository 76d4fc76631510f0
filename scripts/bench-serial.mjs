#!/usr/bin/env node
// Runs a package's benchmark while holding the host's bench lock: `node scripts/bench-serial.mjs
// <command> [args...]`. `npx turbo bench` starts every package's bench at once, and on two cores
// each would measure the others (the agent bench's watch timed out that way), so they take turns,
// in whatever order turbo started them. The lock is a file in KH_LOCK_DIR (default
// $TMPDIR/kubelet-harness/locks), the directory the harness's host-resource locks use.
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFileLock } from '@kh/testkit';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: bench-serial.mjs <command> [args...]');
  process.exit(2);
}
const lockDir = process.env.KH_LOCK_DIR ?? join(tmpdir(), 'kubelet-harness', 'locks');
await mkdir(lockDir, { recursive: true });
const code = await withFileLock(
  join(lockDir, 'bench.lock'),
  () =>
    new Promise((resolve, reject) => {
      const child = spawn(command, args, { stdio: 'inherit' });
      // Signals reach the whole process group; the bench handles them and exits on its own.
      for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => undefined);
      child.on('error', reject);
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    }),
  (pid, host) => console.error(`bench-serial: waiting for the bench of process ${pid} on ${host}`),
);
process.exit(code);
