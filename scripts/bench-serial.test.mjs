// scripts/bench-serial.mjs: two benches started together run one after the other; a bench that
// ends before its arguments are good (--help, bad input) does not wait for the lock.
//   node --test scripts/bench-serial.test.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BENCH_ARGS_OK, BENCH_TURN } from '@kh/testkit';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'bench-serial.mjs');
const dir = mkdtempSync(join(tmpdir(), 'kh-bench-serial-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `body` (a node -e script) under bench-serial; resolves with its exit code. */
function serial(body, locks = join(dir, 'locks')) {
  const child = spawn(process.execPath, [SCRIPT, process.execPath, '-e', body], {
    env: { ...process.env, KH_LOCK_DIR: locks },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve) => child.on('exit', (c) => resolve(c)));
}

/**
 * A "bench" as testkit's benchArgs makes one: it says its arguments are good, waits for its turn,
 * then appends its start and end (ms) to a file, 300 ms apart, and exits with `code`.
 */
function bench(name, code) {
  return serial(
    `process.send(${JSON.stringify(BENCH_ARGS_OK)});process.on('message',(m)=>{if(m!==${JSON.stringify(BENCH_TURN)})return;process.disconnect();const f=require('fs');f.appendFileSync('${join(dir, 'spans')}','${name} in '+Date.now()+'\\n');setTimeout(()=>{f.appendFileSync('${join(dir, 'spans')}','${name} out '+Date.now()+'\\n');process.exit(${code})},300)})`,
  );
}

it('runs two benches one after the other and passes on their exit codes', async () => {
  const codes = await Promise.all([bench('a', 0), bench('b', 3)]);
  assert.deepEqual(codes, [0, 3]);
  const events = readFileSync(join(dir, 'spans'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(' ').slice(0, 2).join(' '));
  // Whichever went first ended before the other began.
  assert.ok(
    JSON.stringify(events) === JSON.stringify(['a in', 'a out', 'b in', 'b out']) ||
      JSON.stringify(events) === JSON.stringify(['b in', 'b out', 'a in', 'a out']),
    events.join(', '),
  );
});

it('does not wait for the lock for a bench that ends before its arguments', { timeout: 10_000 }, async () => {
  // The lock held by a live process (this one): a bench that asked for it would wait forever.
  const locks = join(dir, 'held');
  mkdirSync(locks);
  writeFileSync(join(locks, 'bench.lock'), `${process.pid} ${hostname()}`);
  assert.equal(await serial('process.exit(2)', locks), 2);
  assert.equal(await serial('process.exit(0)', locks), 0);
});
