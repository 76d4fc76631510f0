// Opens the generated report in a real Chromium (Debian's, driven by playwright-core) and uses it
// the way a person would: mouse, keyboard, filters, shared links. Every test also fails on a console
// error, an uncaught exception, a JavaScript dialog (injected markup) or any request off the page.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../../src/report/cli.js';
import { KUBELET_CRI_METHODS } from '../../../src/results/contract.js';
import { BASELINE_PATH, cell, loadFixture, run, SAMPLE_PATH } from '../fixtures.js';
import { axeViolations, launchChromium, TrackedPage, waitForMatrix } from './chromium.js';

const SCREENSHOTS = fileURLToPath(new URL('../../../.reports/screenshots/', import.meta.url));
const quiet = { write: () => true };

let browser: Browser;
let dir: string;
let reportUrl: string;
const pages = new TrackedPage(() => browser);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-test-report-browser-'));
  await mkdir(SCREENSHOTS, { recursive: true });
  const out = join(dir, 'report.html');
  const code = await runReportCommand(['-i', SAMPLE_PATH, '-b', BASELINE_PATH, '-o', out], {
    stdout: quiet,
    stderr: quiet,
  });
  expect(code).toBe(0);
  reportUrl = pathToFileURL(out).href;
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
  const page = await pages.open(url, { bypassCSP });
  await waitForMatrix(page);
  return page;
}

const cells = (page: Page) => page.locator('table.matrix td[role="gridcell"]');
const cellAt = (page: Page, id: string) => page.locator(`td[data-cell="${id}"]`);
const hashOf = (page: Page) => page.evaluate(() => location.hash);
const focusedCell = (page: Page) =>
  page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.cell);
const dialog = (page: Page) => page.locator('#cell-dialog');

describe('HTML report in Chromium', { timeout: 60_000 }, () => {
  it('renders the matrix at a glance with the right counts', async () => {
    const page = await open(reportUrl);
    expect(await page.title()).toBe('kubelet-harness report · nightly-2026-11-22-0300');
    const tile = (kind: string) => page.locator(`[data-count="${kind}"] .tile-value`).textContent();
    expect([await tile('total'), await tile('passed'), await tile('failed'), await tile('skipped')]).toEqual([
      '18',
      '15',
      '2',
      '1',
    ]);
    expect(await page.locator('table.matrix thead th').allTextContents()).toEqual([
      'Scenario',
      'containerdcontainerd v1.6.20',
      'dockerdocker 20.10.24',
      'fakefake-runtime 0.1.0',
    ]);
    expect(await page.locator('table.matrix tbody th').allTextContents()).toEqual([
      'node-registration',
      'status-reporting',
      'probes',
      'gc',
      'eviction',
      'pod-lifecycle',
    ]);
    await expect.poll(() => cells(page).count()).toBe(18);
    expect(await page.locator('td[data-outcome="passed"]').count()).toBe(15);
    expect(await page.locator('td[data-outcome="failed"]').count()).toBe(2);
    expect(await page.locator('td[data-outcome="skipped"]').count()).toBe(1);
    expect(await page.locator('#matrix-status').textContent()).toBe('Showing 18 of 18 cells (2 failed).');

    const failed = cellAt(page, 'docker/probes');
    expect(await failed.locator('.status').textContent()).toBe('✗ fail');
    expect(await failed.locator('.duration').textContent()).toBe('1 min 07 s');
    // What a screen reader announces: the visible text, with which cell it is and the baseline.
    const name = (n: string) => page.getByRole('gridcell', { name: n, exact: true });
    expect(
      await name(
        'probes on docker: fail 1 min 07 s regressed (regression: passed in 17.6 s in baseline)',
      ).count(),
    ).toBe(1);
    expect(await cellAt(page, 'fake/eviction').locator('.status').textContent()).toBe('– skip');
    expect(
      await name(
        'eviction on fake: skip (the fake runtime reports no container stats; eviction needs working-set memory; skipped in baseline)',
      ).count(),
    ).toBe(1);
    expect(await page.locator('[data-runtime-total="docker"]').textContent()).toBe('5/6 passed · 1 failed');

    expect(await page.locator('svg.chart').count()).toBe(3);
    expect(await page.locator('#chart-pod-startup .group-label').allTextContents()).toEqual([
      'containerd',
      'docker',
      'fake',
    ]);
    // The start-up breakdown: one stacked bar per runtime with pods, a segment per stage, the target
    // against the floor in words, and the numbers as a table.
    const breakdown = page.locator('#chart-startup-breakdown');
    expect(await breakdown.locator('.group-label').allTextContents()).toEqual(['containerd', 'docker']);
    expect(await breakdown.locator('svg rect').count()).toBe(18);
    expect(await breakdown.locator('.legend li').first().textContent()).toBe('watch');
    expect(await breakdown.locator('ul.targets li').allTextContents()).toEqual([
      'containerd: pod start-up p50 1.3 s is 7.28× the bare floor 172 ms; target ≤ 2×: not met (30 bare pods at once: p50 905 ms)',
      'docker: pod start-up p50 2.1 s is 7.23× the bare floor 289 ms; target ≤ 2×: not met (30 bare pods at once: p50 1.9 s)',
    ]);
    const stageRows = await breakdown
      .locator('table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent).join('|')),
      );
    expect(stageRows).toContain('containerd|6|sandbox|324 ms|345 ms|345 ms');
    expect(stageRows).toContain('docker|30|bare floor (CRI, at once)|1.9 s|2.7 s|2.8 s');
    // The agent's own calls to its runtime, counted in full from the runtime's statistics, next to
    // the harness's checks; the caller is in the text, not only in the colour.
    const criGroups = await page.locator('#chart-cri .group-label').allTextContents();
    expect(criGroups).toEqual(
      expect.arrayContaining(['RunPodSandbox', 'CreateContainer', 'ListContainers', 'Version']),
    );
    const criLabels = await page.locator('#chart-cri svg text.value').allTextContents();
    expect(criLabels.some((t) => t.startsWith('containerd · agent p50'))).toBe(true);
    expect(criLabels.some((t) => t.startsWith('containerd · harness p50'))).toBe(true);
    const criTable = page.locator('#chart-cri table tbody tr');
    const rowsText = await criTable.evaluateAll((trs) =>
      trs.map((tr) =>
        [...tr.querySelectorAll('td')]
          .slice(0, 4)
          .map((td) => td.textContent)
          .join('|'),
      ),
    );
    expect(rowsText).toContain('ListContainers|containerd|agent|154');
    expect(await page.locator('#benchmarks tbody tr').count()).toBe(4);
    await page.screenshot({ path: join(SCREENSHOTS, 'report-overview.png'), fullPage: true });
  });

  it('flags regressions against the baseline', async () => {
    const page = await open(reportUrl);
    expect(await cellAt(page, 'docker/probes').locator('.badge--regressed').textContent()).toBe(
      '▲ regressed',
    );
    expect(await cellAt(page, 'containerd/gc').locator('.badge--slower').textContent()).toMatch(
      /^△ \+\d+% slower$/,
    );
    expect(await cellAt(page, 'fake/pod-lifecycle').locator('.badge--fixed').textContent()).toBe('fixed');
    expect(await page.locator('.cell--regression').count()).toBe(2);
    const baseline = page.locator('#baseline');
    expect(await baseline.locator('h3').allTextContents()).toEqual([
      'Compared with baseline',
      'Regressions (2)',
      'CRI latency regressions (1)',
      'Fixed (1)',
    ]);
    expect(await baseline.locator('.changes--cri li').allTextContents()).toEqual([
      'CreateContainer on containerd (agent): p99 14 ms, was 5 ms',
    ]);
    expect(await baseline.locator('.changes--regressed li').allTextContents()).toEqual([
      'docker/probes — regression: passed in 17.6 s in baseline',
      expect.stringMatching(
        /^containerd\/gc — duration regression: passed in 11\.4 s in baseline, \d+% slower now$/,
      ),
    ]);
    await baseline.getByRole('button', { name: 'containerd/gc' }).click();
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('gc on containerd');
    expect(await page.locator('#cell-body .compare').textContent()).toMatch(/^Baseline: duration regression/);
  });

  it("shows the matrix's CPU-seconds in the header, each cell's in the matrix and its drill-down", async () => {
    const page = await open(`${reportUrl}#cell=containerd/pod-lifecycle`);
    expect(await page.locator('#run-meta .cpu').textContent()).toBe(
      'used 612 CPU-s (containerd nodes 241 CPU-s, docker nodes 310 CPU-s, apiserver and registries 26 CPU-s, harness 35 CPU-s); host busy 655 CPU-s',
    );
    expect(await cellAt(page, 'containerd/probes').locator('.cpu').textContent()).toBe('9.4 CPU-s');
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('pod-lifecycle on containerd');
    expect(await page.locator('#cell-body .cell-meta .cpu').textContent()).toBe(
      'node 14 CPU-s (node shared with containerd/probes) · host 42 CPU-s meanwhile',
    );
  });

  it("drills into a cell's start-up breakdown: stages, total and the bare floor", async () => {
    const page = await open(`${reportUrl}#cell=containerd/pod-lifecycle`);
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('pod-lifecycle on containerd');
    const section = page.locator('#cell-body section[aria-labelledby="dd-breakdown"]');
    expect(await section.locator('p').textContent()).toBe(
      '6 pods through every step (API create to status written), 2 not (adopted, failed or exited).',
    );
    expect(await section.locator('tbody th').allTextContents()).toEqual([
      'watch',
      'admit',
      'worker',
      'prepare',
      'sandbox',
      'image',
      'create',
      'start',
      'status',
      'total',
      'bare floor, one pod',
      'bare floor, 30 at once',
    ]);
  });

  it('drills into a failed cell: assertion with expected and actual, timeline, logs', async () => {
    const page = await open(reportUrl);
    await cellAt(page, 'docker/probes').click();
    await expect.poll(() => dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    expect(await hashOf(page)).toBe('#cell=docker/probes');
    expect(await page.locator('#cell-title').textContent()).toBe('probes on docker');
    expect(await page.locator('#cell-body .reason').textContent()).toBe(
      'liveness failure restarts the container: expected restartCount >= 1, got 0 after 60s',
    );

    const failedRow = page.locator('tr.assertion--failed');
    expect(await failedRow.count()).toBe(1);
    expect(await failedRow.locator('th').textContent()).toBe(
      'liveness failure restarts the containercontainer app in probes-docker/liveness-http was not restarted within 60s',
    );
    expect(await failedRow.locator('.expected').textContent()).toContain('"restartCount": ">= 1"');
    expect(await failedRow.locator('.actual').textContent()).toContain('"restartCount": 0');

    const recorded = loadFixture(SAMPLE_PATH).cells.find(
      (c) => c.runtime === 'docker' && c.scenario === 'probes',
    )!;
    const rows = page.locator('table.timeline tbody tr');
    expect(await rows.count()).toBe(recorded.timeline.length);
    const criRows = page.locator('table.timeline tbody tr[data-kind="cri-call"]');
    expect(await criRows.count()).toBe(recorded.timeline.filter((e) => e.kind === 'cri-call').length);
    const stop = criRows.filter({ hasText: 'DEADLINE_EXCEEDED' });
    expect(await stop.locator('td').nth(2).textContent()).toMatch(
      /^agentStopContainer probes-docker\/liveness-http/,
    );
    // Every call of the cell per caller and method, and how the timeline sampled them.
    const stats = page.locator('#cell-body table.cri-stats tbody tr');
    expect(await stats.count()).toBe(recorded.criCalls!.length);
    expect(await stats.filter({ hasText: 'StopContainer' }).locator('td').nth(2).textContent()).toBe(
      String(recorded.criCalls!.find((c) => c.method === 'StopContainer')!.errors),
    );
    expect(await page.locator('#cell-body .cri-sample').textContent()).toMatch(
      /^The timeline shows \d+ of the agent’s \d+ calls/,
    );
    expect(await stop.locator('.latency').textContent()).toMatch(/\d(\.\d)? s$/);
    for (const kind of ['pod-phase', 'container-state', 'event', 'note']) {
      expect(await page.locator(`table.timeline tr[data-kind="${kind}"]`).count()).toBeGreaterThan(0);
    }
    await page.screenshot({ path: join(SCREENSHOTS, 'report-drilldown.png') });
    await page.getByRole('checkbox', { name: /^CRI call/ }).uncheck();
    expect(await criRows.first().isHidden()).toBe(true);
    expect(await page.locator('table.timeline tbody tr:visible').count()).toBe(recorded.timeline.length - 41);

    // Log lines hold HTML; they must show as text and never become markup.
    const agentLog = page.locator('.log pre').first();
    expect(await agentLog.textContent()).toContain(
      'probe body: <html><body><h1>500</h1><script>alert("probe")</script>',
    );
    expect(await page.locator('#cell-body script, #cell-body h1').count()).toBe(0);
    expect(await page.locator('.log h4').allTextContents()).toEqual([
      'agent (6 lines)',
      'shim (2 lines)',
      'runtime (2 lines)',
      'harness (2 lines)',
    ]);
    expect(await page.locator('.log .line.hot').count()).toBeGreaterThan(0);

    await page.locator('#cell-close').click();
    await expect.poll(() => hashOf(page)).toBe('');
    expect(await dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
  });

  it('filters by runtime, by scenario and to failures only, keeping them in the URL hash', async () => {
    const page = await open(reportUrl);
    await page.getByRole('combobox', { name: 'Runtime' }).selectOption('docker');
    await expect.poll(() => hashOf(page)).toBe('#runtime=docker');
    expect(await cells(page).count()).toBe(6);
    expect(
      (await cells(page).evaluateAll((els) => els.map((e) => e.dataset.cell))).every((id) =>
        id?.startsWith('docker/'),
      ),
    ).toBe(true);
    expect(await page.locator('#chart-pod-startup .group-label').allTextContents()).toEqual(['docker']);
    expect(await page.locator('#chart-startup-breakdown .group-label').allTextContents()).toEqual(['docker']);

    await page.getByRole('checkbox', { name: 'Failures only' }).check();
    await expect.poll(() => hashOf(page)).toBe('#runtime=docker&failures=1');
    expect(await cells(page).evaluateAll((els) => els.map((e) => e.dataset.cell))).toEqual(['docker/probes']);
    expect(await page.locator('#matrix-status').textContent()).toBe('Showing 1 of 18 cells (1 failed).');

    await page.getByRole('combobox', { name: 'Runtime' }).selectOption('');
    await expect.poll(() => hashOf(page)).toBe('#failures=1');
    expect(await cells(page).evaluateAll((els) => els.map((e) => e.dataset.cell))).toEqual([
      'containerd/probes',
      'docker/probes',
      'containerd/eviction',
      'docker/eviction',
    ]);
    expect(await page.locator('td.cell--muted').count()).toBe(2);

    await page.getByRole('combobox', { name: 'Scenario' }).selectOption('gc');
    await expect.poll(() => page.locator('#matrix-status').textContent()).toBe('No cells match the filters.');
    await page.getByRole('checkbox', { name: 'Failures only' }).uncheck();
    await expect.poll(() => hashOf(page)).toBe('#scenario=gc');
    expect(await cells(page).count()).toBe(3);

    await page.getByRole('button', { name: 'Reset filters' }).click();
    await expect.poll(() => cells(page).count()).toBe(18);
    expect(await hashOf(page)).toBe('');
  });

  it('restores filters and the open cell from the URL hash, on load, reload and hashchange', async () => {
    const page = await open(`${reportUrl}#runtime=containerd&failures=1&cell=containerd/eviction`);
    const check = async () => {
      expect(await page.getByRole('combobox', { name: 'Runtime' }).inputValue()).toBe('containerd');
      expect(await page.getByRole('checkbox', { name: 'Failures only' }).isChecked()).toBe(true);
      expect(await cells(page).evaluateAll((els) => els.map((e) => e.dataset.cell))).toEqual([
        'containerd/eviction',
      ]);
      await expect.poll(() => dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
      expect(await page.locator('#cell-title').textContent()).toBe('eviction on containerd');
      expect(await page.locator('tr.assertion--failed .expected').first().textContent()).toContain(
        '"status": "True"',
      );
    };
    await check();
    await page.reload();
    await page.locator('table.matrix').waitFor();
    await check();

    await page.evaluate(() => {
      location.hash = '#scenario=gc';
    });
    await expect.poll(() => dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    expect(await cells(page).count()).toBe(3);
    expect(await page.getByRole('combobox', { name: 'Scenario' }).inputValue()).toBe('gc');
    expect(await page.getByRole('combobox', { name: 'Runtime' }).inputValue()).toBe('');
    expect(await page.getByRole('checkbox', { name: 'Failures only' }).isChecked()).toBe(false);

    // A stale link (unknown runtime, unknown cell) shows everything rather than nothing.
    await page.evaluate(() => {
      location.hash = '#runtime=cri-o&cell=cri-o/gc';
    });
    await expect.poll(() => cells(page).count()).toBe(18);
    expect(await dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
  });

  it('is navigable with the keyboard: arrows move, Enter and Space open, Escape closes', async () => {
    const page = await open(reportUrl);
    expect(await page.locator('td[role="gridcell"][tabindex="0"]').count()).toBe(1);
    await page.locator('#filter-reset').focus();
    await page.keyboard.press('Tab');
    expect(await focusedCell(page)).toBe('docker/probes'); // the tab stop starts on the first failure
    const steps: [string, string][] = [
      ['ArrowLeft', 'containerd/probes'],
      ['ArrowLeft', 'containerd/probes'], // stays at the edge
      ['ArrowUp', 'containerd/status-reporting'],
      ['ArrowRight', 'docker/status-reporting'],
      ['ArrowDown', 'docker/probes'],
      ['ArrowDown', 'docker/gc'],
      ['End', 'fake/gc'],
      ['Home', 'containerd/gc'],
    ];
    for (const [key, expected] of steps) {
      await page.keyboard.press(key);
      expect([key, await focusedCell(page)]).toEqual([key, expected]);
    }
    expect(await page.locator('td[role="gridcell"][tabindex="0"]').getAttribute('data-cell')).toBe(
      'containerd/gc',
    );

    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('gc on containerd');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('cell-close');
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog(page).evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    expect(await focusedCell(page)).toBe('containerd/gc');
    await expect.poll(() => hashOf(page)).toBe('');

    await page.keyboard.press('ArrowDown');
    await page.keyboard.press(' ');
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('eviction on containerd');
    await page.keyboard.press('Escape');
    await expect.poll(() => focusedCell(page)).toBe('containerd/eviction');
  });

  it('reads without colour, has labelled controls and headings, and keeps text contrast >= 4.5:1', async () => {
    const page = await open(reportUrl);
    const texts = await cells(page).evaluateAll((els) =>
      els.map((e) => e.querySelector('.status')?.textContent),
    );
    expect(new Set(texts)).toEqual(new Set(['✓ pass', '✗ fail', '– skip']));
    expect(
      await page
        .getByRole('gridcell', { name: /^[a-z-]+ on (containerd|docker|fake): (pass|fail|skip)\b/ })
        .count(),
    ).toBe(18);
    expect(await page.locator('h1').allTextContents()).toEqual(['kubelet-harness report']);
    expect(await page.locator('main h2').allTextContents()).toEqual([
      'Summary',
      'Results by scenario and runtime',
      'Latency',
      'CRI contract (kubelet 1.33)',
      'Benchmarks',
    ]);
    expect(await page.getByRole('grid', { name: 'Results by scenario and runtime' }).count()).toBe(1);
    expect(await page.getByRole('combobox', { name: 'Scenario' }).count()).toBe(1);
    expect(await page.getByRole('img', { name: /^Pod start-up latency by runtime/ }).count()).toBe(1);

    // Narrow windows: wide tables scroll inside their card, the page itself never scrolls sideways.
    await page.setViewportSize({ width: 800, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(800);
    for (const failuresOnly of [false, true]) {
      await page.getByRole('checkbox', { name: 'Failures only' }).setChecked(failuresOnly);
      const lowest = await lowestContrast(page);
      expect(lowest[0]!.ratio, JSON.stringify(lowest)).toBeGreaterThanOrEqual(4.5);
    }
  });
});

/** The three lowest text/background contrast ratios among the page's status text. */
function lowestContrast(page: Page) {
  return page.evaluate(() => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]: number[]) => {
      const f = (v: number) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
    };
    const background = (el: Element | null): number[] => {
      for (; el; el = el.parentElement) {
        const c = rgb(getComputedStyle(el).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3]! > 0)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const ratio = (el: Element) => {
      const a = lum(rgb(getComputedStyle(el).color));
      const b = lum(background(el));
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    };
    const selector =
      'td.cell .status, td.cell .duration, .badge, .tile-value, .tile-label, .meta span, .status-line, .hint, .runtimes li, table.matrix th';
    return [...document.querySelectorAll(selector)]
      .filter((el) => el.textContent?.trim())
      .map((el) => ({
        text: el.textContent!.trim().slice(0, 30),
        ratio: Math.round(ratio(el) * 100) / 100,
      }))
      .sort((x, y) => x.ratio - y.ratio)
      .slice(0, 3);
  });
}

describe('accessibility audit (axe-core) in Chromium', { timeout: 60_000 }, () => {
  it('finds no WCAG 2.1 A/AA violation on the page, with filters on, or in the drill-down', async () => {
    // The page's CSP rightly refuses the injected audit script; this context lets it in.
    const page = await open(reportUrl, { bypassCSP: true });
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('checkbox', { name: 'Failures only' }).check();
    expect(await axeViolations(page)).toEqual([]);
    await cellAt(page, 'docker/probes').click();
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('probes on docker');
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe('a sparse run in Chromium', { timeout: 60_000 }, () => {
  it('shows the CRI contract per runtime: called, Unimplemented and not called, in words', async () => {
    const stat = { min: 1, p50: 1, p90: 1, p99: 1, max: 1 };
    const results = run([cell('containerd', 'a'), cell('docker', 'a')], {
      runtimes: [
        {
          name: 'containerd',
          runtimeName: 'containerd',
          runtimeVersion: '1.6.20',
          criCalls: [{ source: 'agent', method: 'RuntimeConfig', count: 1, errors: 0, ...stat }],
        },
        {
          name: 'docker',
          runtimeName: 'docker',
          runtimeVersion: '20.10.24',
          criCalls: [
            {
              source: 'agent',
              method: 'RuntimeConfig',
              count: 1,
              errors: 1,
              codes: { UNIMPLEMENTED: 1 },
              ...stat,
            },
          ],
        },
      ],
    });
    const input = join(dir, 'contract.json');
    const out = join(dir, 'contract.html');
    await writeFile(input, JSON.stringify(results));
    expect(await runReportCommand(['-i', input, '-o', out], { stdout: quiet, stderr: quiet })).toBe(0);
    const page = await open(pathToFileURL(out).href);
    const table = page.locator('table.contract');
    expect(await table.locator('thead th').allTextContents()).toEqual([
      'Method',
      'The kubelet calls it on',
      'containerd',
      'docker',
    ]);
    expect(await table.locator('tbody tr').count()).toBe(KUBELET_CRI_METHODS.length);
    const at = (method: string, runtime: string) =>
      table.locator(`tr[data-method="${method}"] td[data-runtime="${runtime}"]`).textContent();
    expect(await at('RuntimeConfig', 'containerd')).toBe('✓ 1 call');
    expect(await at('RuntimeConfig', 'docker')).toBe('⚠ Unimplemented: 1 call, UNIMPLEMENTED ×1');
    expect(await at('UpdateContainerResources', 'docker')).toBe('– not called');
  });

  it("drills into a cell's named cases: each result, a failed case's assertion and its pods' events", async () => {
    const file = 'test/e2e/common/node/security_context.go';
    const results = run([
      cell('containerd', 'security-context', {
        outcome: 'failed',
        reason: '1 of 3 cases failed',
        timeline: [
          {
            t: 2_000,
            kind: 'event',
            summary: 'Warning Failed: container has runAsNonRoot and image will run as root',
            detail: { object: 'Pod/implicit-root-uid' },
          },
          {
            t: 2_100,
            kind: 'event',
            summary: 'Normal Pulled: <b>pulled</b>',
            detail: { object: 'Pod/busybox-user-0' },
          },
        ],
        cases: [
          {
            name: 'Security Context When creating a container with runAsUser should run the container with uid 0 [LinuxOnly]',
            tags: ['NodeConformance'],
            file,
            outcome: 'passed',
            durationMs: 4_200,
            pods: ['busybox-user-0'],
            assertions: [],
          },
          {
            name: 'Security Context When creating a container with runAsNonRoot should not run without a specified user ID',
            file,
            outcome: 'failed',
            durationMs: 30_000,
            reason: 'pod implicit-root-uid: Failed event: values differ',
            pods: ['implicit-root-uid'],
            assertions: [
              {
                name: 'pod implicit-root-uid: Failed event',
                outcome: 'failed',
                expected: 'Failed',
                actual: 'Started',
                seen: [
                  { atMs: 3, value: 'Pending' },
                  { atMs: 2_500, value: 'Started' },
                ],
                message: 'pod implicit-root-uid: Failed event: values differ',
              },
            ],
          },
          {
            name: 'Security Context SupplementalGroupsPolicy [LinuxOnly] when SupplementalGroupsPolicy was set to Strict in PodSpec it should NOT add SupplementalGroups to them [LinuxOnly]',
            outcome: 'skipped',
            reason: 'this node does not support SupplementalGroupsPolicy',
          },
        ],
      }),
    ]);
    const input = join(dir, 'cases.json');
    const out = join(dir, 'cases.html');
    await writeFile(input, JSON.stringify(results));
    expect(await runReportCommand(['-i', input, '-o', out], { stdout: quiet, stderr: quiet })).toBe(0);

    const page = await open(pathToFileURL(out).href);
    await cellAt(page, 'containerd/security-context').click();
    const section = page.locator('#cell-body section[aria-labelledby="dd-cases"]');
    expect(await section.locator('h3').textContent()).toBe('Cases (3: 1 passed, 1 failed, 1 skipped)');
    const rows = section.locator('tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(0).locator('th').textContent()).toBe(
      `Security Context When creating a container with runAsUser should run the container with uid 0 [LinuxOnly] [NodeConformance]${file}`,
    );
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toBe('4.2 s');
    const failed = page.locator('tr.case--failed');
    expect(await failed.locator('.case-assertion .message').textContent()).toBe(
      'pod implicit-root-uid: Failed event: values differ',
    );
    expect(await failed.locator('.case-assertion').textContent()).toContain('Expected: "Failed"');
    expect(await failed.locator('.case-assertion .seen li').allTextContents()).toEqual([
      '+3 ms "Pending"',
      '+2.5 s "Started"',
    ]);
    expect(await failed.locator('.case-events li').allTextContents()).toEqual([
      '2.0 s Pod/implicit-root-uid Warning Failed: container has runAsNonRoot and image will run as root',
    ]);
    expect(await page.locator('tr.case--skipped .message').textContent()).toBe(
      'this node does not support SupplementalGroupsPolicy',
    );
  });

  it('shows cells that did not run, and empty sections instead of errors', async () => {
    // Partial results: two cells of a 2x2 matrix, nothing recorded inside them, no benchmarks.
    const results = run([
      cell('containerd', 'a', { outcome: 'failed', reason: 'node never became Ready' }),
      cell('docker', 'b', { outcome: 'skipped', reason: 'dockerd not installed' }),
    ]);
    const input = join(dir, 'sparse.json');
    const out = join(dir, 'sparse.html');
    await writeFile(input, JSON.stringify(results));
    expect(await runReportCommand(['-i', input, '-o', out], { stdout: quiet, stderr: quiet })).toBe(0);

    const page = await open(pathToFileURL(out).href);
    expect(await cells(page).count()).toBe(4);
    expect(await page.locator('td.cell--missing').allTextContents()).toEqual([
      'a on docker: not run',
      'b on containerd: not run',
    ]);
    expect(await page.locator('#matrix-status').textContent()).toBe('Showing 2 of 2 cells (1 failed).');
    expect(await page.locator('#chart-pod-startup').textContent()).toBe(
      'No pod start-up latencies were recorded.',
    );
    expect(await page.locator('#chart-cri').textContent()).toBe('No CRI calls were recorded.');
    expect(await page.locator('#chart-startup-breakdown').textContent()).toBe(
      'No start-up breakdown was recorded.',
    );
    expect(await page.locator('#benchmarks-section').isHidden()).toBe(true);
    expect(await page.locator('#baseline').count()).toBe(0);

    await cellAt(page, 'containerd/a').focus();
    await page.keyboard.press('ArrowRight');
    const notRun = page.getByRole('gridcell', { name: 'a on docker: not run', exact: true });
    expect(await notRun.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter'); // nothing to open
    expect(await page.locator('#cell-dialog[open]').count()).toBe(0);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#cell-title').textContent()).toBe('a on containerd');
    expect(await page.locator('#cell-body .empty').allTextContents()).toEqual([
      'No assertions were recorded.',
      'No timeline was recorded.',
      'No log excerpt was recorded.',
    ]);
  });
});

describe('report --serve in Chromium', { timeout: 60_000 }, () => {
  it('serves the same page on 127.0.0.1 and stops on abort', async () => {
    const stop = new AbortController();
    const out = {
      text: '',
      write(t: string) {
        out.text += t;
      },
    };
    const done = runReportCommand(['-i', SAMPLE_PATH, '-b', BASELINE_PATH, '--serve', '--port', '0'], {
      stdout: out,
      signal: stop.signal,
    });
    try {
      await expect.poll(() => out.text).toMatch(/Serving the report at http:\/\/127\.0\.0\.1:\d+\//);
      const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out.text)![1]!;
      const page = await open(`${url}#failures=1&cell=docker/probes`);
      expect(await cells(page).count()).toBe(4);
      await expect.poll(() => page.locator('#cell-title').textContent()).toBe('probes on docker');
    } finally {
      stop.abort();
    }
    expect(await done).toBe(0);
  });
});
