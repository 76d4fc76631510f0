// Debian's Chromium driven by playwright-core, shared by the report's browser tests. A page opened
// here records every console error or warning, uncaught exception, JavaScript dialog (injected
// markup) and request off the page, so a test can fail on any of them.
import { access } from 'node:fs/promises';
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

/** Resolves once the report's script has rendered the matrix. */
export async function waitForMatrix(page: Page): Promise<void> {
  await page
    .locator('#matrix-status')
    .filter({ hasText: /cells|match/ })
    .waitFor();
}
