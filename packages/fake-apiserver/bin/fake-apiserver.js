#!/usr/bin/env node
// The `fake-apiserver` bin: a committed shim, so that npm links it before the first build (scripts/run-bin.mjs).
import { runBuilt } from '../../../scripts/run-bin.mjs';

await runBuilt(import.meta.url, '../dist/cli.js');
