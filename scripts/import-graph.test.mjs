// scripts/import-graph.mjs on small package trees written for each case.
//   node --test scripts/import-graph.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  analysePackage,
  check,
  isBarrel,
  packageDirs,
  parseImports,
  undeclaredImports,
} from './import-graph.mjs';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'import-graph.mjs');
const dirs = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A repo root with the given files (path -> source); its package.json names the workspaces. */
function tree(files, workspaces = ['packages/*', 'apps/*']) {
  const root = mkdtempSync(join(tmpdir(), 'kh-import-graph-'));
  dirs.push(root);
  writeFileSync(join(root, 'package.json'), JSON.stringify({ workspaces }));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  }
  return root;
}

describe('parseImports', () => {
  it('reads relative import and export statements, and which carry only types', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      'import {',
      '  type C,',
      '  type D,',
      "} from './c.js';",
      "import { type E, f } from './e.js';",
      "import './side-effect.js';",
      "export * from './star.js';",
      "export type { G } from './g.js';",
      "export { h } from './h.js';",
      "import * as ns from '.';",
      "import { x } from 'node:fs';",
      "import { y } from '@kh/cri-api';",
      "export const notAnImport = './z.js';",
      " * import { doc } from './in-a-comment.js';",
    ].join('\n');
    assert.deepEqual(parseImports(source), [
      { specifier: './a.js', typeOnly: false },
      { specifier: '../b/b.js', typeOnly: true },
      { specifier: './c.js', typeOnly: true },
      { specifier: './e.js', typeOnly: false },
      { specifier: './side-effect.js', typeOnly: false },
      { specifier: './star.js', typeOnly: false },
      { specifier: './g.js', typeOnly: true },
      { specifier: './h.js', typeOnly: false },
      { specifier: '.', typeOnly: false },
    ]);
  });
});

describe('analysePackage', () => {
  it('finds file and folder cycles, folder pairs and upward imports', () => {
    const root = tree({
      // Code of its own: this index.ts is a root file like any other, not a barrel.
      'p/src/index.ts': "export * from './a/one.js';\nexport * from './b';\nexport const version = 1;",
      'p/src/shared.ts': 'export const s = 1;',
      'p/src/a/one.ts':
        "import { two } from './two.js';\nimport { b } from '../b/index.js';\nexport const one = 1;",
      'p/src/a/two.ts': "import type { one } from './one.js';\nexport const two = 2;",
      'p/src/b/index.ts':
        "import { s } from '../shared.js';\nimport { one } from '../a/one.js';\nexport const b = 1;",
      'p/src/b/types.d.ts': "import { one } from '../a/one.js';",
    });
    const g = analysePackage(join(root, 'p/src'));
    assert.equal(g.files, 5);
    assert.equal(g.imports, 7);
    assert.equal(g.typeOnly, 1);
    assert.deepEqual(g.folderPairs, ['. <-> b', 'a <-> b']);
    assert.deepEqual(g.upward, ['b/index.ts -> shared.ts']);
    assert.deepEqual(
      g.cycles.files.map((c) => c.members),
      [['a/one.ts', 'a/two.ts', 'b/index.ts']],
    );
    assert.deepEqual(
      g.cycles.folders.map((c) => [c.members, c.edges]),
      [
        [
          ['.', 'a', 'b'],
          ['. -> a', '. -> b', 'a -> b', 'b -> .', 'b -> a'],
        ],
      ],
    );
  });
});

describe('the public barrel', () => {
  it('tells a module that only re-exports from one with code or imports of its own', () => {
    assert.equal(isBarrel("// entry\nexport * from './a.js';\nexport type { B } from './b/b.js';\n"), true);
    assert.equal(
      isBarrel(
        "/** doc */\nexport {\n  one,\n  type Two,\n} from './one.js';\nexport * as ns from './ns.js';",
      ),
      true,
    );
    assert.equal(isBarrel("export * from './a.js';\nexport const v = 1;"), false);
    assert.equal(isBarrel("import { a } from './a.js';\nexport { a };"), false);
    assert.equal(isBarrel(''), false);
  });

  it('keeps a re-exporting src/index.ts out of the folder graph, not out of the file graph', () => {
    const root = tree({
      'p/src/index.ts': "export * from './a/one.js';\nexport { shared } from './shared.js';",
      'p/src/shared.ts': 'export const shared = 1;',
      'p/src/a/one.ts': "import { shared } from '../shared.js';\nexport const one = shared;",
    });
    const g = analysePackage(join(root, 'p/src'));
    assert.equal(g.imports, 3);
    assert.deepEqual(g.cycles.folders, []);
    assert.deepEqual(g.folderPairs, []);
    assert.deepEqual(g.upward, ['a/one.ts -> shared.ts']);
    // The same file graph with the barrel importing back into a/ still closes a file circle.
    const circular = tree({
      'p/src/index.ts': "export * from './a/one.js';",
      'p/src/a/one.ts': "export * from '../index.js';",
    });
    assert.deepEqual(
      analysePackage(join(circular, 'p/src')).cycles.files.map((c) => c.members),
      [['a/one.ts', 'index.ts']],
    );
  });
});

describe('check', () => {
  const cyclic = {
    'packages/p/src/x/a.ts': "import { b } from './b.js';\nexport const a = 1;",
    'packages/p/src/x/b.ts': "import { a } from './a.js';\nexport const b = 1;",
    'packages/q/src/index.ts': "export const ok = 1;\nimport './y/c.js';",
    'packages/q/src/y/c.ts': 'export const c = 1;',
    'apps/r/src/main.ts': "import { z } from './z/z.js';",
    'apps/r/src/z/z.ts': 'export const z = 1;',
  };
  const allowAB = {
    cycles: [
      { package: 'packages/p', kind: 'files', issue: 19, edges: ['x/a.ts -> x/b.ts', 'x/b.ts -> x/a.ts'] },
    ],
  };

  it('fails on a cycle the allow-list does not list, naming a circle and its imports', () => {
    const r = check(tree(cyclic));
    assert.equal(r.lines.length, 3);
    assert.match(r.lines[0], /^packages\/p: 2 files, 2 imports \(0 type-only\), 1 folders; 1 file cycles/);
    assert.deepEqual(r.failures, [
      {
        package: 'packages/p',
        kind: 'files',
        members: ['x/a.ts', 'x/b.ts'],
        unlisted: ['x/a.ts -> x/b.ts', 'x/b.ts -> x/a.ts'],
        circle: ['x/a.ts', 'x/b.ts', 'x/a.ts'],
      },
    ]);
  });

  it('passes listed cycles, and reports listed imports that no longer close a circle', () => {
    const r = check(tree(cyclic), {
      cycles: [...allowAB.cycles, { package: 'packages/q', kind: 'folders', issue: 19, edges: ['y -> .'] }],
    });
    assert.deepEqual(r.failures, []);
    assert.match(r.lines[0], /1 file cycles, 0 folder cycles \(1 of 1 allowed\)/);
    assert.deepEqual(
      r.stale.map((s) => [s.entry.package, s.edge]),
      [['packages/q', 'y -> .']],
    );
  });

  it('fails on a new import inside a known cycle', () => {
    const root = tree({
      ...cyclic,
      'packages/p/src/x/c.ts': "import { a } from './a.js';\nexport const c = 1;",
      'packages/p/src/x/b.ts':
        "import { a } from './a.js';\nimport { c } from './c.js';\nexport const b = 1;",
    });
    const r = check(root, allowAB);
    assert.deepEqual(
      r.failures.map((f) => [f.unlisted, f.circle]),
      [
        [
          ['x/b.ts -> x/c.ts', 'x/c.ts -> x/a.ts'],
          ['x/b.ts', 'x/c.ts', 'x/a.ts', 'x/b.ts'],
        ],
      ],
    );
  });

  it('exits 1 on a new cycle and 0 once it is listed, as a command', () => {
    const root = tree(cyclic);
    const allowFile = join(root, 'allow.json');
    writeFileSync(allowFile, JSON.stringify(allowAB));
    const bare = spawnSync(process.execPath, [SCRIPT, '--root', root, '--allow', join(root, 'none.json')], {
      encoding: 'utf8',
    });
    assert.equal(bare.status, 1);
    assert.match(bare.stderr, /packages\/p \(files\): x\/a\.ts -> x\/b\.ts -> x\/a\.ts/);
    const listed = spawnSync(process.execPath, [SCRIPT, '--root', root, '--allow', allowFile], {
      encoding: 'utf8',
    });
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /import graph: no new cycles/);
  });
});

describe('every workspace', () => {
  it('covers the workspaces package.json names, globs and plain folders alike', () => {
    const root = tree(
      {
        'packages/a/src/a.ts': 'export const a = 1;',
        'backends/b/src/b.ts': 'export const b = 1;',
        'e2e/src/e.ts': 'export const e = 1;',
        'docs/src/not-a-workspace.ts': 'export const d = 1;',
      },
      ['packages/*', 'backends/*', 'e2e'],
    );
    assert.deepEqual(packageDirs(root), ['packages/a', 'backends/b', 'e2e']);
  });

  it("names an import of another workspace that the importer's package.json does not declare", () => {
    const root = tree(
      {
        'packages/lib/package.json': JSON.stringify({ name: '@x/lib' }),
        'packages/lib/src/index.ts': 'export const lib = 1;',
        'apps/tool/package.json': JSON.stringify({ name: '@x/tool', dependencies: { '@x/lib': '*' } }),
        'apps/tool/src/main.ts': "import { lib } from '@x/lib';\nimport { x } from '@other/pkg';",
        'apps/tool/src/suite.ts': "export const load = () => import('@x/suite');",
        'e2e/package.json': JSON.stringify({ name: '@x/suite', dependencies: { '@x/tool': '*' } }),
        'e2e/src/index.ts': "export { main } from '@x/tool/main';",
      },
      ['packages/*', 'apps/*', 'e2e'],
    );
    assert.deepEqual(undeclaredImports(root), ['apps/tool/src/suite.ts -> @x/suite']);
  });
});
