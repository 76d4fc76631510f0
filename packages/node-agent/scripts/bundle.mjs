// Bundles the agent into one ESM file, after tsc has built dist/. Why: memory. V8 keeps every
// module's source text for the life of the process (we measured about twice its size in the
// large-object space), and the agent uses four of @kubernetes/client-node's API groups while
// importing the package, even just KubeConfig, loads all of its generated clients (about 14 MB
// of source). esbuild's tree-shaking drops the unused groups, and minification shrinks what
// remains: whitespace halved it (RSS at import: 116 MiB unbundled, 99 MiB bundled, 91 MiB
// minified), and short local names take the source V8 keeps from 5.5 to 3.7 MB. Not keepNames:
// its name property on every function cost 1.7 MB of property arrays in the heap, what the short
// names saved. Stack traces get their names and positions back from the linked source map under
// node --enable-source-maps. The models stay: the serializer's type map references every one.
// The command is two files: <name>.mjs, a small launcher (src/launcher.ts: it sets glibc's mmap
// threshold before the agent starts), and <name>-main.mjs, the agent's bundle it runs.
//   node scripts/bundle.mjs           the command as it ships: dist/bundle/node-agent.mjs
//   node scripts/bundle.mjs --bench   the benchmark (bench/, not shipped), into bench/dist/
import { build } from 'esbuild';

const agentOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  outExtension: { '.js': '.mjs' },
  minify: true,
  // The bundle must stay ASCII: V8 keeps the source text of every script for the life of the
  // process, and a single non-ASCII character (one license comment had one) doubles it to UTF-16.
  // esbuild escapes strings by default; license comments go to <bundle>.LEGAL.txt.
  legalComments: 'linked',
  sourcemap: 'linked',
  // Bundled CommonJS dependencies (grpc-js, prom-client) call require() for Node's built-ins,
  // which an ES module does not have.
  banner: {
    js: "import { createRequire as __khCreateRequire } from 'node:module';\nconst require = __khCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
};

if (process.argv.includes('--bench')) {
  // The benchmark's agent process: the command's code, bundled the same way, plus an IPC probe
  // for its memory and requests.
  await buildCommand('bench-agent', 'bench/agent_process.ts', 'bench/dist');
  // The benchmark itself loads its test tooling (testkit, the fake apiserver) from node_modules.
  await build({
    entryPoints: { cli: 'bench/cli.ts' },
    outdir: 'bench/dist',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node22',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
} else {
  // The harness, docker-compose and the package's bin run this file.
  await buildCommand('node-agent', 'dist/main.js', 'dist/bundle');
}

/** <name>.mjs, the launcher, and <name>-main.mjs, the agent from `main`, into `outdir`. */
async function buildCommand(name, main, outdir) {
  await build({ ...agentOptions, entryPoints: { [`${name}-main`]: main }, outdir });
  const { bundle, platform, format, target, outExtension, logLevel } = agentOptions;
  await build({
    ...{ bundle, platform, format, target, outExtension, logLevel },
    entryPoints: { [name]: 'src/launcher.ts' },
    outdir,
  });
}
