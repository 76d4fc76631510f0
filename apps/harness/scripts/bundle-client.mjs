// Bundles the report page's script: src/report/client/app.ts and the modules it imports become the
// one file that html.ts inlines into every report, since the page can load nothing else (its CSP
// allows only its own inline script, and a report must work offline as a single file). Types are
// checked by tsc (tsconfig.client.build.json) before this runs; esbuild only strips them.
//   node scripts/bundle-client.mjs
import { build } from 'esbuild';

const pkg = new URL('..', import.meta.url).pathname;

await build({
  absWorkingDir: pkg,
  entryPoints: ['src/report/client/app.ts'],
  outfile: 'dist/client/report-page.js',
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
