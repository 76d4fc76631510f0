// The report of a real run. CI points KH_REAL_RESULTS at the results.json the e2e matrix has just
// written (`npm run test:report-real`); without it there is nothing real to open and this is
// skipped. The page must show every recorded cell with the run's own outcome and counts, open each
// cell with its whole timeline, and chart the CRI calls our agent made to each runtime (read from
// its --cri-call-log on the node), in Chromium, without a console error or an outside request.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../../src/report/cli.js';
import { loadFixture } from '../fixtures.js';
import { launchChromium, trackProblems, waitForMatrix } from './chromium.js';

const REAL = process.env.KH_REAL_RESULTS;
const SCREENSHOTS = fileURLToPath(new URL('../../../.reports/screenshots/', import.meta.url));
const quiet = { write: () => true };

describe.runIf(REAL)('the report of a real e2e run in Chromium', { timeout: 180_000 }, () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-test-report-real-'));
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shows every cell with the run’s outcomes and counts, and opens each with its timeline', async () => {
    const input = REAL!;
    const results = loadFixture(input);
    const out = join(dir, 'report.html');
    expect(await runReportCommand(['-i', input, '-o', out], { stdout: quiet, stderr: quiet })).toBe(0);
    const url = pathToFileURL(out).href;
    const page = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
    const problems = trackProblems(page, url);
    await page.goto(url);
    await waitForMatrix(page);

    const count = (outcome: string) => String(results.cells.filter((c) => c.outcome === outcome).length);
    const tile = (kind: string) => page.locator(`[data-count="${kind}"] .tile-value`).textContent();
    expect([await tile('total'), await tile('passed'), await tile('failed'), await tile('skipped')]).toEqual([
      String(results.cells.length),
      count('passed'),
      count('failed'),
      count('skipped'),
    ]);
    for (const c of results.cells) {
      const cell = page.locator(`td[data-cell="${c.runtime}/${c.scenario}"]`);
      expect(await cell.getAttribute('data-outcome')).toBe(c.outcome);
      await cell.click();
      await expect
        .poll(() => page.locator('#cell-title').textContent())
        .toBe(`${c.scenario} on ${c.runtime}`);
      expect(await page.locator('table.timeline tbody tr').count()).toBe(c.timeline.length);
      expect(await page.locator('#cell-body table.cri-stats tbody tr').count()).toBe(c.criCalls?.length ?? 0);
      // A cell that ran for seconds has the agent's calls: its PLEG relists the runtime every
      // second (a 1 s cell may end between two relists and their 250 ms flush).
      if (c.outcome !== 'skipped' && c.durationMs >= 5_000) {
        const agentRows = page.locator('table.timeline tbody tr[data-kind="cri-call"]', {
          has: page.locator('.caller', { hasText: /^agent$/ }),
        });
        expect(await agentRows.count(), `${c.runtime}/${c.scenario}`).toBeGreaterThan(0);
      }
      // The agent's start-up steps of the cell's pods, stage by stage.
      if (c.startupBreakdown?.pods)
        expect(
          await page.locator('#cell-body section[aria-labelledby="dd-breakdown"] tbody tr').count(),
          `${c.runtime}/${c.scenario}`,
        ).toBeGreaterThanOrEqual(10);
      await page.keyboard.press('Escape');
      await expect
        .poll(() => page.locator('#cell-dialog').evaluate((d: HTMLDialogElement) => d.open))
        .toBe(false);
    }
    // The CRI latency chart's data table: method | runtime | caller | calls ...
    const criRows = await page
      .locator('#chart-cri table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
      );
    const charted = (runtime: string) =>
      new Set(criRows.filter((r) => r[1] === runtime && r[2] === 'agent').map((r) => r[0]));
    for (const rt of results.runtimes) {
      const ran = results.cells.filter((c) => c.runtime === rt.name && c.outcome !== 'skipped');
      if (ran.length === 0) continue;
      const expected = ['ListPodSandbox', 'ListContainers'];
      // Pods started on this runtime: the agent created them through CRI.
      if (ran.some((c) => c.podStartupMs?.length))
        expected.push('RunPodSandbox', 'CreateContainer', 'StartContainer');
      expect([...charted(rt.name)], rt.name).toEqual(expect.arrayContaining(expected));
      // ...and the agent recorded their start-up steps: the runtime has a stacked bar.
      if (ran.some((c) => c.podStartupMs?.length))
        expect(
          await page.locator('#chart-startup-breakdown .group-label').allTextContents(),
          rt.name,
        ).toContain(rt.name);
    }
    await page.screenshot({ path: join(SCREENSHOTS, 'report-real-run.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
