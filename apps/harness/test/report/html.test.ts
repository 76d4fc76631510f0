import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildReportModel } from '../../src/report/aggregate.js';
import { jsonForScript, loadClientScript, renderReportHtml } from '../../src/report/html.js';
import { REPORT_CSS } from '../../src/report/styles.js';
import { BASELINE_PATH, loadFixture, SAMPLE_PATH } from './fixtures.js';

describe('jsonForScript', () => {
  it('leaves no way to close the script element, and parses back to the same value', () => {
    const value = { log: '</script><script>alert(1)</script><!-- & \u2028\u2029 >' };
    const text = jsonForScript(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('renderReportHtml', () => {
  const model = buildReportModel(loadFixture(SAMPLE_PATH), { baseline: loadFixture(BASELINE_PATH) });
  let script: string;
  let html: string;
  beforeAll(async () => {
    script = await loadClientScript();
    html = renderReportHtml(model, script);
  });

  it('carries data only inside the JSON block', () => {
    const json = /<script type="application\/json" id="report-data">([^<]*)<\/script>/.exec(html)?.[1];
    expect(json).toBeDefined();
    expect(JSON.parse(json!)).toEqual(JSON.parse(JSON.stringify(model)));
    // The recorded probe body has HTML in it; outside the JSON block it must not appear at all.
    const outside = html.replace(json!, '');
    expect(outside).not.toContain('alert(');
    expect(outside).not.toContain('nightly-2026-11-22-0300');
    expect(html.match(/<script/g)).toHaveLength(2);
  });

  it('pins its inline script and style by hash and allows no network access', () => {
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? '';
    const hash = (s: string) => createHash('sha256').update(s).digest('base64');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src 'sha256-${hash(script)}'`);
    expect(csp).toContain(`style-src 'sha256-${hash(REPORT_CSS)}'`);
    expect(html).toContain(`<script type="module">${script}</script>`);
    expect(html).toContain(`<style>${REPORT_CSS}</style>`);
    expect(html).not.toMatch(/\s(src|href)="(?!data:)/);
  });

  it('inlines the bundled browser script without a source map comment', () => {
    expect(script).toContain('new ReportPage(');
    expect(script).not.toContain('sourceMappingURL');
  });

  it('refuses a script that would end its own element', () => {
    expect(() => renderReportHtml(model, 'let s = "</script>";')).toThrow(/must not contain/);
  });
});

describe('loadClientScript', () => {
  it('tells how to build the script when it is missing', async () => {
    await expect(loadClientScript('/nonexistent/kh/app.js')).rejects.toThrow(/build the package first/);
  });
});
