#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { FakeRuntime } from './fake_runtime.js';

// `fake-cri --listen unix:///tmp/fake.sock [--image ref=sizeBytes ...]`: serves the in-memory
// runtime until SIGINT/SIGTERM, for poking at the CRI by hand (crictl) or from another process.
const USAGE = 'usage: fake-cri --listen <unix:///path|/path|tcp://host:port> [--image <ref>=<sizeBytes>]...';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string' },
      image: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!values.listen) throw new Error(`--listen is required\n${USAGE}`);
  const fake = await FakeRuntime.start({ address: values.listen });
  for (const spec of values.image ?? []) {
    const eq = spec.lastIndexOf('=');
    const size = eq > 0 ? Number(spec.slice(eq + 1)) : Number.NaN;
    if (!Number.isSafeInteger(size) || size < 0)
      throw new Error(`--image wants <ref>=<sizeBytes>, got "${spec}"`);
    fake.addImage(spec.slice(0, eq), size);
  }
  console.log(`fake-cri listening on ${fake.endpoint}`);
  const shutdown = async () => {
    await fake.stop();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  console.error(`fake-cri: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
