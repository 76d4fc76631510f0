// Bundles the pages' scripts: src/report/client/app.ts (the report) and src/history/client/app.ts
// (the history page), each with the modules it imports, become one file each that html.ts inlines
// into every page, since a page can load nothing else (its CSP allows only its own inline script,
// and a page must work offline as a single file). Types are checked by tsc
// (tsconfig.client.build.json) before this runs; esbuild only strips them.
//   node scripts/bundle-client.mjs
import { build } from 'esbuild';

const pkg = new URL('..', import.meta.url).pathname;

await build({
  absWorkingDir: pkg,
  entryPoints: { 'report-page': 'src/report/client/app.ts', 'history-page': 'src/history/client/app.ts' },
  outdir: 'dist/client',
  tsconfig: 'tsconfig.client.json',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2023',
  // Readable in the page's source, like the code it comes from; the report is not size-bound.
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
});
