#!/usr/bin/env node
// The node-agent executable. The build bundles this entry into dist/bundle/node-agent-main.mjs,
// which the command that ships, dist/bundle/node-agent.mjs (src/launcher.ts), runs.
// First: V8's heap settings must be in place before the big modules run.
import './v8_flags.js';
import { newKubeletCommand } from './cli.js';

newKubeletCommand()
  .execute(process.argv.slice(2))
  .then((code) => process.exit(code));
