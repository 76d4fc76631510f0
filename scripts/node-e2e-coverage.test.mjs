// scripts/node-e2e-coverage.mjs on small case lists and scenario sets.
//   node --test scripts/node-e2e-coverage.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { coverage, render } from './node-e2e-coverage.mjs';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'node-e2e-coverage.mjs');
const dir = mkdtempSync(join(tmpdir(), 'kh-node-e2e-coverage-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const list = {
  files: [
    {
      file: 'a_test.go',
      commit: 'c0ffee',
      cases: [{ case: 'A one' }, { case: 'A two', uncovered: 'needs a kernel feature' }],
    },
  ],
};

describe('coverage', () => {
  it('joins scenarios to cases and renders covered, uncovered with the reason, and the totals', () => {
    const model = coverage(list, [
      { name: 'first', upstream: [{ file: 'a_test.go', case: 'A one' }] },
      { name: 'second', upstream: [{ file: 'a_test.go', case: 'A one' }] },
      { name: 'none' },
      { name: 'elsewhere', upstream: [{ file: 'b_test.go', case: 'B one' }] },
    ]);
    assert.deepEqual(model.problems, []);
    const doc = render(model);
    assert.match(doc, /## Other upstream cases mirrored[\s\S]*\| `b_test.go` \| B one \| `elsewhere` \|/);
    assert.match(doc, /\*\*1 of 2 cases covered \(50%\)\.\*\*/);
    assert.match(doc, /\| `a_test.go` \| 2 \| 1 \(50%\) \|/);
    assert.match(doc, /\| A one \| `first`, `second` \|/);
    assert.match(doc, /\| A two \| not covered: needs a kernel feature \|/);
  });

  it("reads a scenario's declared cases with a file, showing their labels; cases of our own are not upstream's", () => {
    const model = coverage(list, [
      {
        name: 'declared',
        cases: [
          { name: 'A one', file: 'a_test.go', tags: ['NodeConformance', 'Conformance'] },
          { name: 'our own check' },
        ],
      },
    ]);
    assert.deepEqual(model.problems, []);
    assert.deepEqual(model.other, []);
    const doc = render(model);
    assert.match(doc, /\| A one \[NodeConformance\] \[Conformance\] \| `declared` \|/);
    assert.match(doc, /\*\*1 of 2 cases covered \(50%\)\.\*\*/);
    // A declared case naming a case the list lacks is a problem, as an `upstream` entry is.
    const unknown = coverage(list, [{ name: 'typo', cases: [{ name: 'A three', file: 'a_test.go' }] }]);
    assert.equal(
      unknown.problems[0],
      'scenario typo names a case the list does not have: a_test.go: A three',
    );
  });

  it('reports unknown cases, covered cases that keep a reason and uncovered ones without', () => {
    const model = coverage(
      {
        files: [
          {
            file: 'a_test.go',
            commit: 'c0ffee',
            cases: [{ case: 'A one' }, { case: 'A two', uncovered: 'x' }],
          },
        ],
      },
      [
        {
          name: 's',
          upstream: [
            { file: 'a_test.go', case: 'A two' },
            { file: 'a_test.go', case: 'A three' },
          ],
        },
      ],
    );
    assert.deepEqual(model.problems, [
      'scenario s names a case the list does not have: a_test.go: A three',
      'a_test.go: "A one" is covered by no scenario and gives no reason',
      'a_test.go: "A two" is covered by s but still gives a reason',
    ]);
  });

  it('writes the doc, and --check passes on it and fails once a scenario changes', () => {
    const file = (name, text) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const listPath = file('list.json', JSON.stringify(list));
    const doc = join(dir, 'coverage.md');
    const covering = file(
      'covering.mjs',
      "export const scenarios = [{ name: 'first', upstream: [{ file: 'a_test.go', case: 'A one' }] }];\n",
    );
    const renamed = file(
      'renamed.mjs',
      "export const scenarios = [{ name: 'renamed', upstream: [{ file: 'a_test.go', case: 'A one' }] }];\n",
    );
    const run = (...args) =>
      spawnSync(process.execPath, [SCRIPT, '--list', listPath, '--doc', doc, ...args], { encoding: 'utf8' });
    assert.equal(run('--suite', covering).status, 0);
    assert.equal(run('--check', '--suite', covering).status, 0);
    const stale = run('--check', '--suite', renamed);
    assert.equal(stale.status, 1);
    assert.match(stale.stderr, /is stale/);
  });
});
