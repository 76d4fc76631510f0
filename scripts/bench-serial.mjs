#!/usr/bin/env node
// Runs a package's benchmark while holding the host's bench lock: `node scripts/bench-serial.mjs
// <command> [args...]`. `npx turbo bench` starts every package's bench at once, and on two cores
// each would measure the others (the agent bench's watch timed out that way), so they take turns,
// in whatever order turbo started them. turbo.json starts them only once the harness and the e2e
// suite are built (every package with a bench is below them), so the run's builds do not compete
// with a measurement. The lock is a file in KH_LOCK_DIR (default $TMPDIR/kubelet-harness/locks),
// the directory the harness's host-resource locks use.
// The bench starts at once and reads its arguments first (testkit's benchArgs): --help and bad
// input end it without the lock, so they neither wait behind another bench nor hold one up. Good
// arguments are sent over IPC (BENCH_ARGS_OK), and the bench waits for BENCH_TURN, sent once the
// lock is held. A command that never sends BENCH_ARGS_OK runs to its end without the lock.
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_ARGS_OK, BENCH_TURN, withFileLock } from '@kh/testkit';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: bench-serial.mjs <command> [args...]');
  process.exit(2);
}
const lockDir = process.env.KH_LOCK_DIR ?? join(tmpdir(), 'kubelet-harness', 'locks');
await mkdir(lockDir, { recursive: true });
const child = spawn(command, args, { stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
// Signals reach the whole process group; the bench handles them and exits on its own.
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => undefined);
const exited = new Promise((resolve, reject) => {
  child.on('error', reject);
  child.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
});
const argsOk = new Promise((resolve) => child.on('message', (m) => m === BENCH_ARGS_OK && resolve(true)));
const code = (await Promise.race([argsOk, exited.then(() => false)]))
  ? await withFileLock(
      join(lockDir, 'bench.lock'),
      () => {
        if (child.connected) child.send(BENCH_TURN);
        return exited;
      },
      (pid, host) => console.error(`bench-serial: waiting for the bench of process ${pid} on ${host}`),
    )
  : await exited;
process.exit(code);
