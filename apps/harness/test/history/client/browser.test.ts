// The history page of the ten synthetic runs in Debian's Chromium (playwright-core): the grid, a
// flaky badge, the newest run's changes, the alerts, the failures by message, the benches' trend,
// a square's link into that run's report drill-down, the keyboard and the axe-core audit. Every
// test also fails on a console error, an uncaught exception, a JavaScript dialog or a request off
// the page (report/client/chromium.ts).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runHistoryCommand } from '../../../src/history/command.js';
import { axeViolations, launchChromium, TrackedPage } from '../../report/client/chromium.js';
import { commitOf, NOW, writeSyntheticRuns } from '../synthetic.js';

const SCREENSHOTS = fileURLToPath(new URL('../../../.reports/screenshots/', import.meta.url));

let browser: Browser;
let dir: string;
let pageUrl: string;
const pages = new TrackedPage(() => browser);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-history-browser-'));
  await mkdir(SCREENSHOTS, { recursive: true });
  await writeSyntheticRuns(join(dir, 'runs'));
  const trend = join(dir, 'bench', 'streaming.jsonl');
  await mkdir(join(dir, 'bench'), { recursive: true });
  await writeFile(
    trend,
    [1.21, 1.32, 1.62, 1.25]
      .map((ratio, i) =>
        JSON.stringify({
          benchmark: 'streaming',
          at: `2026-11-2${i + 1}T04:00:00Z`,
          figures: [
            { name: 'containerd exec ratio', value: ratio, unit: '×', target: 1.5, met: ratio <= 1.5 },
            // Within its target, but 40% over the median of the three runs before: a regression.
            { name: 'docker exec ratio', value: i < 3 ? 1 : 1.4, unit: '×', target: 1.5, met: true },
          ],
        }),
      )
      .join('\n'),
  );
  const out = join(dir, 'history');
  const code = await runHistoryCommand(
    [
      join(dir, 'runs'),
      '-o',
      out,
      '--fail-after',
      '4',
      '--bench',
      trend,
      '--bench-regression',
      '25',
      '--bench-window',
      '3',
      '--run-url',
      'https://ci.example/runs/1',
    ],
    { out: () => {}, err: () => {}, now: () => NOW },
  );
  expect(code).toBe(1);
  pageUrl = pathToFileURL(join(out, 'history.html')).href;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  expect(await pages.close()).toEqual([]);
});

async function open(url: string, { bypassCSP = false } = {}): Promise<Page> {
  // The squares lead to the run reports beside the page (runs/): requests there are the page's own.
  const page = await pages.open(url, { bypassCSP, pageOrigin: new URL('.', url).href });
  await page.locator('#grid-status').filter({ hasText: /rows/ }).waitFor();
  return page;
}

const rowHead = (page: Page, id: string) => page.locator(`tr[data-row-id="${id}"] th`);
const squares = (page: Page, id: string) => page.locator(`tr[data-row-id="${id}"] td[role="gridcell"]`);

describe('history page in Chromium', { timeout: 60_000 }, () => {
  it('shows the grid: a row per cell, a column per run with its date, commit and versions', async () => {
    const page = await open(pageUrl);
    expect(await page.title()).toBe('kubelet-harness history · 10 runs');
    expect(await page.locator('#grid-status').textContent()).toBe(
      'Showing 11 of 11 rows over 10 runs: 4 failing, 4 flaky.',
    );
    expect(await page.locator('table.hgrid tbody tr').count()).toBe(11);
    const runHeads = page.locator('table.hgrid thead th.run');
    expect(await runHeads.count()).toBe(10);
    expect(await runHeads.first().locator('.run-date').textContent()).toBe('2026-11-28');
    expect(await runHeads.first().locator('.run-time').textContent()).toBe('02:17');
    expect(await runHeads.first().locator('.run-commit').textContent()).toBe(commitOf(10).slice(0, 7));
    expect(await runHeads.first().locator('a').getAttribute('href')).toBe('https://ci.example/runs/1');
    // One version row per runtime; docker-26's change (run 6) is marked where it happened.
    const docker = page.locator('tr.versions', { has: page.locator('th', { hasText: 'docker-26' }) });
    expect(await docker.locator('td').allTextContents()).toEqual([
      '26.1.6',
      '26.1.6',
      '26.1.6',
      '26.1.6',
      '26.1.6 (changed)',
      '26.1.5',
      '26.1.5',
      '26.1.5',
      '26.1.5',
      '26.1.5',
    ]);
    expect(await docker.locator('td.ver--changed').count()).toBe(1);
    const kubectl = squares(page, 'containerd-1.7/kubectl');
    expect(await kubectl.first().locator('.status').textContent()).toBe('✗ fail');
    expect(await kubectl.first().getAttribute('data-outcome')).toBe('failed');
    // Each square has its duration (a skip has none worth showing).
    expect(await kubectl.first().locator('.duration').textContent()).toBe('17.0 s');
    expect(await kubectl.last().locator('.status').textContent()).toBe('✓ pass');
    expect(await kubectl.last().locator('.duration').textContent()).toBe('8.0 s');
    const skipped = squares(page, 'docker-26/gc').first();
    expect(await skipped.locator('.status').textContent()).toBe('– skip');
    expect(await skipped.locator('.duration').count()).toBe(0);
    expect(await squares(page, 'containerd-1.7/pod-lifecycle').last().textContent()).toContain('not run');
    await page.screenshot({ path: join(SCREENSHOTS, 'history-overview.png'), fullPage: true });
  });

  it('marks flaky rows with a badge and the rule, failing rows with their streak, quarantine with its owner', async () => {
    const page = await open(pageUrl);
    const flaky = page.locator('tbody [data-badge="flaky"]');
    expect(await flaky.count()).toBe(4);
    const probes = rowHead(page, 'docker-26/probes');
    expect(await probes.locator('.badge').allTextContents()).toEqual(['⚑ flaky', 'new flake']);
    expect(await probes.textContent()).toContain('flaky: changed outcome 2 times in the last 10 runs');
    expect(await rowHead(page, 'containerd-1.7/kubectl').locator('.row-note--failing').textContent()).toBe(
      `failing for 4 runs, since ${commitOf(7).slice(0, 7)} (2026-11-25 02:17)`,
    );
    const gc = rowHead(page, 'containerd-1.7/gc');
    expect(await gc.locator('.badge').allTextContents()).toEqual(['⚑ flaky', 'quarantined']);
    expect(await gc.textContent()).toContain(
      'quarantined until 2026-12-31 by sig-node-oncall: image GC race',
    );
    expect(await rowHead(page, 'docker-26/kubectl').locator('.badge').allTextContents()).toEqual(['fixed']);
  });

  it('shows the alerts, the newest run against the runs before, and failures by message', async () => {
    const page = await open(pageUrl);
    expect(await page.locator('[data-alert="fail-after"]').textContent()).toBe(
      'Failing too long:1 row has failed 4 or more runs in a row: containerd-1.7/kubectl (4)',
    );
    expect(await page.locator('[data-alert="bench-regression"]').textContent()).toBe(
      'Bench regression:1 bench figure is more than 25% worse than the median of 3 runs before: streaming · docker exec ratio 1.4 × (median 1 ×, 40% worse)',
    );
    const list = (key: string) => page.locator(`[data-summary="${key}"] li code`).allTextContents();
    expect(await list('new-failures')).toEqual(['containerd-1.7/eviction', 'containerd-1.7/pod-lifecycle']);
    expect(await list('new-flakes')).toEqual(['docker-26/probes']);
    expect(await list('fixed')).toEqual(['docker-26/kubectl']);
    expect(await list('still-failing')).toEqual(['containerd-1.7/kubectl', 'containerd-1.7/gc']);
    const clusters = page.locator('table.clusters tbody tr');
    expect(await clusters.count()).toBe(4);
    expect(await clusters.first().locator('td').allTextContents()).toEqual([
      '13',
      '10',
      'kubectl logs --previous: pod <name>/<name> answered <n> after <n> ms',
      'containerd-1.7/kubectl, docker-26/kubectl',
      expect.stringContaining('logs-10 answered 400'),
    ]);
  });

  it('draws the benches over time, the missed target marked and the data in a table', async () => {
    const page = await open(pageUrl);
    const fig = page.locator('[data-figure="containerd exec ratio"]');
    expect(await fig.locator('.latest').textContent()).toBe('newest 1.25 × (target ≤ 1.5 ×: met), 4 runs');
    expect(await fig.locator('svg.trend circle').count()).toBe(4);
    expect(await fig.locator('svg.trend circle.point--missed').count()).toBe(1);
    expect(await fig.locator('svg.trend line.target').count()).toBe(1);
    expect(await fig.locator('details.data tbody tr').count()).toBe(4);
  });

  it('filters rows (flaky, failing now, a runtime) and keeps the view in the URL hash', async () => {
    const page = await open(pageUrl);
    await page.getByLabel('Rows', { exact: true }).selectOption('flaky');
    expect(await page.evaluate(() => location.hash)).toBe('#rows=flaky');
    expect(
      await page
        .locator('table.hgrid tbody tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-row-id'))),
    ).toEqual(['containerd-1.7/probes', 'docker-26/probes', 'docker-26/eviction', 'containerd-1.7/gc']);
    await page.getByLabel('Runtime', { exact: true }).selectOption('docker-26');
    expect(await page.locator('#grid-status').textContent()).toBe(
      'Showing 2 of 11 rows over 10 runs: 0 failing, 2 flaky.',
    );
    // A copied link restores the view; an unknown value in it is ignored.
    await page.goto(`${pageUrl}#rows=failing&runtime=nope`);
    await page.reload();
    await page.locator('#grid-status').filter({ hasText: /rows/ }).waitFor();
    expect(await page.getByLabel('Rows', { exact: true }).inputValue()).toBe('failing');
    expect(await page.getByLabel('Runtime', { exact: true }).inputValue()).toBe('');
    expect(await page.locator('#grid-status').textContent()).toBe(
      'Showing 4 of 11 rows over 10 runs: 4 failing, 1 flaky.',
    );
  });

  it("a square's link opens that run's report at the cell's drill-down, by mouse and by keyboard", async () => {
    const page = await open(pageUrl);
    const square = squares(page, 'containerd-1.7/kubectl').nth(3);
    expect(await square.locator('a').getAttribute('href')).toBe(
      'runs/nightly-07.html#cell=containerd-1.7/kubectl',
    );
    await square.locator('a').click();
    await page.waitForURL(/runs\/nightly-07\.html#cell=containerd-1\.7\/kubectl$/);
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('kubectl on containerd-1.7');
    expect(await page.locator('#cell-body .reason').textContent()).toMatch(
      /^kubectl logs --previous: pod kh-ns-52a\/logs-7/,
    );

    // Keyboard: one tab stop (the first row failing in the newest run), arrows, Enter.
    await page.goto(pageUrl);
    await page.locator('#grid-status').filter({ hasText: /rows/ }).waitFor();
    expect(await page.locator('table.hgrid td[tabindex="0"]').count()).toBe(1);
    await page.locator('table.hgrid td[tabindex="0"]').focus();
    const focused = () =>
      page.evaluate(() => (document.activeElement?.closest('tr') as HTMLElement | null)?.dataset.rowId);
    expect(await focused()).toBe('containerd-1.7/kubectl');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('docker-26/kubectl');
    await page.keyboard.press('Enter');
    await page.waitForURL(/runs\/nightly-09\.html#cell=docker-26\/kubectl$/);
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('kubectl on docker-26');
  });
});

describe('history page with fewer reports kept', { timeout: 60_000 }, () => {
  it("links the squares of a run whose report is gone to the run's own page", async () => {
    const out = join(dir, 'history-few');
    const code = await runHistoryCommand(
      [join(dir, 'runs'), '-o', out, '--reports', '1', '--run-url', 'https://ci.example/runs/1'],
      { out: () => {}, err: () => {}, now: () => NOW },
    );
    expect(code).toBe(0);
    const page = await open(pathToFileURL(join(out, 'history.html')).href);
    const links = squares(page, 'containerd-1.7/kubectl').locator('a');
    expect(await links.evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual([
      'runs/nightly-10.html#cell=containerd-1.7/kubectl',
      ...Array(9).fill('https://ci.example/runs/1'),
    ]);
  });
});

describe("a run's report, reached from the history", { timeout: 60_000 }, () => {
  it('shows a quarantined cell as failed, with its badge, and who holds it until when', async () => {
    const page = await open(pageUrl);
    await squares(page, 'containerd-1.7/gc').first().locator('a').click();
    await page.waitForURL(/runs\/nightly-10\.html#cell=containerd-1\.7\/gc$/);
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('gc on containerd-1.7');
    expect(await page.locator('#cell-body .cell-meta .badge--quarantined').textContent()).toBe('quarantined');
    expect(await page.locator('#cell-body').textContent()).toContain(
      'quarantined until 2026-12-31 by sig-node-oncall: image GC race, kubernetes#0 (a failure does not fail the run).',
    );
    await page.keyboard.press('Escape');
    const cell = page.locator('td[data-cell="containerd-1.7/gc"]');
    expect(await cell.locator('.badge--quarantined').textContent()).toBe('quarantined');
    expect(await cell.getAttribute('data-outcome')).toBe('failed');
  });
});

describe('history page accessibility (axe-core) in Chromium', { timeout: 60_000 }, () => {
  it('finds no WCAG 2.1 A/AA violation, with the page whole and filtered', async () => {
    const page = await open(pageUrl, { bypassCSP: true });
    expect(await axeViolations(page)).toEqual([]);
    await page.getByLabel('Rows', { exact: true }).selectOption('failing');
    expect(await axeViolations(page)).toEqual([]);
  });
});
