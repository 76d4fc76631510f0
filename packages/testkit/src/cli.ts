#!/usr/bin/env node
import { removeLeftovers } from './containers/leftovers.js';
import { removeHostCniLeftovers } from './host-cni.js';
import { removeHostContainerdLeftovers } from './host-containerd.js';
import { ensureImages } from './images/ensure.js';
import { DEFAULT_IMAGES, DEFAULT_NODE_RELEASE, IMAGE_NAMES, isImageName } from './images/recipes.js';
import { formatSeconds } from './util/progress.js';

const USAGE = `Usage:
  kh-testkit images [--force] [name...]   build the local images that are missing
                                          (default: ${DEFAULT_IMAGES.join(', ')})
                                          names: ${IMAGE_NAMES.join(', ')}
                                          (node = node-${DEFAULT_NODE_RELEASE}, the default release)
  kh-testkit leftovers [--run <id>]       remove containers, networks and volumes labelled kh.run`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const log = (line: string) => console.log(line);
  if (command === 'images') {
    const force = rest.includes('--force');
    const names = rest.filter((a) => a !== '--force');
    const unknown = names.filter((n) => !isImageName(n));
    if (unknown.length > 0) {
      console.error(`Unknown image(s): ${unknown.join(', ')}. Known: ${IMAGE_NAMES.join(', ')}`);
      return 2;
    }
    const started = performance.now();
    const refs = await ensureImages(names.length > 0 ? names.filter(isImageName) : DEFAULT_IMAGES, {
      progress: log,
      force,
    });
    log(`images ready in ${formatSeconds(performance.now() - started)}:`);
    for (const [name, ref] of Object.entries(refs)) log(`  ${name.padEnd(13)} ${ref}`);
    return 0;
  }
  if (command === 'leftovers') {
    const runIndex = rest.indexOf('--run');
    const runId = runIndex >= 0 ? rest[runIndex + 1] : undefined;
    const removed = await removeLeftovers({ runId, progress: log });
    // containerd outlives a killed test process: sweep the host containerds whose owner is gone too.
    const containerds = await removeHostContainerdLeftovers({ progress: log });
    const cniNetworks = await removeHostCniLeftovers();
    log(
      `removed ${removed.containers} container(s), ${removed.networks} network(s), ${removed.volumes} volume(s), ${containerds} host containerd(s), ${cniNetworks} host CNI network(s)`,
    );
    return 0;
  }
  console.error(USAGE);
  return command === undefined || command === '--help' || command === '-h' ? 0 : 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`kh-testkit: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
