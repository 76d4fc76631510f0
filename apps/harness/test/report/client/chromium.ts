// Debian's Chromium driven by playwright-core, shared by the report's browser tests. A page opened
// here records every console error or warning, uncaught exception, JavaScript dialog (injected
// markup) and request off the page, so a test can fail on any of them.
import { access } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type Axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';

const CHROMIUM = process.env.KH_CHROMIUM ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  // No browser download here: the tests need the system's Chromium, and say so when it is missing.
  await access(CHROMIUM).catch(() => {
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set KH_CHROMIUM`);
  });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright gives each launch a fresh temporary profile (the --user-data-dir).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Starts recording what must never happen on `page`; returns the growing list. */
export function trackProblems(page: Page, url: string): string[] {
  const problems: string[] = [];
  const origin = url.startsWith('file:') ? url.split('#')[0]! : new URL(url).origin;
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`javascript dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) problems.push(`request: ${r.url()}`);
  });
  return problems;
}

/**
 * One page at a time in a fresh browser context, each watched by trackProblems: `open` starts it,
 * `close` (in afterEach) ends it and gives back what went wrong on it.
 */
export class TrackedPage {
  private current: { page: Page; problems: string[] } | undefined;

  constructor(private readonly browser: () => Browser) {}

  /** `pageOrigin`: the URL requests may go to (default the page's own). */
  async open(url: string, { bypassCSP = false, pageOrigin = url } = {}): Promise<Page> {
    const context = await this.browser().newContext({ viewport: { width: 1360, height: 900 }, bypassCSP });
    const page = await context.newPage();
    this.current = { page, problems: trackProblems(page, pageOrigin) };
    await page.goto(url);
    return page;
  }

  async close(): Promise<string[]> {
    if (!this.current) return [];
    const { page, problems } = this.current;
    this.current = undefined;
    await page.context().close();
    return problems;
  }
}

/** Resolves once the report's script has rendered the matrix. */
export async function waitForMatrix(page: Page): Promise<void> {
  await page
    .locator('#matrix-status')
    .filter({ hasText: /cells|match/ })
    .waitFor();
}

const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** Runs axe-core's WCAG 2.1 A and AA rules on the page; returns one line per violation. */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE_PATH });
  const results = await page.evaluate(() =>
    (window as unknown as { axe: typeof Axe }).axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    }),
  );
  return results.violations.map(
    (v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`,
  );
}
