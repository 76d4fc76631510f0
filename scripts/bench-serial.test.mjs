// scripts/bench-serial.mjs: two benches started together run one after the other.
//   node --test scripts/bench-serial.test.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'bench-serial.mjs');
const dir = mkdtempSync(join(tmpdir(), 'kh-bench-serial-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A "bench" that appends its start and end (ms) to a file, 300 ms apart, and exits with `code`. */
function bench(name, code) {
  const body = `const f=require('fs');f.appendFileSync('${join(dir, 'spans')}','${name} in '+Date.now()+'\\n');setTimeout(()=>{f.appendFileSync('${join(dir, 'spans')}','${name} out '+Date.now()+'\\n');process.exit(${code})},300)`;
  const child = spawn(process.execPath, [SCRIPT, process.execPath, '-e', body], {
    env: { ...process.env, KH_LOCK_DIR: join(dir, 'locks') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve) => child.on('exit', (c) => resolve(c)));
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
