import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { goSourceDigest } from '../src/images/go.js';
import { goProgramAt } from '../src/images/go-program.js';

describe('Go programs kept outside the images', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-go-program-test-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  test('goProgramAt refuses a directory without Go source before building anything', async () => {
    await writeFile(join(dir, 'README.md'), 'no program here\n');
    await expect(goProgramAt(dir, 'none')).rejects.toThrow(`${dir} holds no Go source`);
  });

  test("a program's source digest follows its files' names and contents, wherever it lives", async () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    for (const d of [a, b]) {
      await mkdir(d);
      await writeFile(join(d, 'main.go'), 'package main\n\nfunc main() {}\n');
    }
    expect(await goSourceDigest(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(await goSourceDigest(b)).toBe(await goSourceDigest(a));
    await writeFile(join(b, 'main.go'), 'package main\n\nfunc main() { println() }\n');
    expect(await goSourceDigest(b)).not.toBe(await goSourceDigest(a));
    const before = await goSourceDigest(a);
    await writeFile(join(a, 'util.go'), 'package main\n');
    expect(await goSourceDigest(a)).not.toBe(before);
  });
});
