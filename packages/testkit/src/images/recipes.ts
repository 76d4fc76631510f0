/**
 * The image recipes, as data: everything that decides an image's content is in here or in the
 * inputs resolved at build time (see hash.ts), so the tag can be a hash of it.
 */

export const IMAGE_NAMES = ['pause', 'busybox', 'httpd', 'memhog', 'diskhog', 'node'] as const;
export type ImageName = (typeof IMAGE_NAMES)[number];

export const IMAGE_REPOSITORY_PREFIX = 'kubelet-harness';

/** Image config applied at import time (docker import --change). */
export interface ImageConfig {
  cmd?: string[];
  entrypoint?: string[];
  env?: string[];
  exposedPorts?: string[];
  workdir?: string;
}

export interface ImageFile {
  content: string;
  mode: number;
}

/** A tiny image: the static busybox with every applet linked in /bin, plus a few files. */
export interface BusyboxRecipe {
  kind: 'busybox';
  name: ImageName;
  description: string;
  files: Record<string, ImageFile>;
  config: ImageConfig;
}

/** A Debian root filesystem made by debootstrap. */
export interface DebootstrapRecipe {
  kind: 'debootstrap';
  name: ImageName;
  description: string;
  suite: string;
  variant: string;
  packages: string[];
  config: ImageConfig;
}

export type Recipe = BusyboxRecipe | DebootstrapRecipe;

/** PID 1 ignores SIGTERM without a handler; the trap lets a runtime stop these images at once. */
const STOP_ON_TERM = "trap 'exit 0' TERM INT";
const FOREVER = 'sleep 2147483647';

const sh = (script: string): ImageFile => ({ content: `#!/bin/sh\n${script}`, mode: 0o755 });

const MEMHOG =
  sh(`# Grows its memory by MEMHOG_STEP_MB every MEMHOG_INTERVAL_S seconds until it holds MEMHOG_MB
# (0 = no limit), then keeps it. tail holds the newline-free stream of zeros in memory while
# it waits for the end of its input, so its resident size is the amount written so far.
${STOP_ON_TERM}
total=\${MEMHOG_MB:-256}
step=\${MEMHOG_STEP_MB:-16}
interval=\${MEMHOG_INTERVAL_S:-1}
{
  held=0
  while [ "$total" -eq 0 ] || [ "$held" -lt "$total" ]; do
    head -c "\${step}m" /dev/zero
    held=$((held + step))
    echo "memhog: holding \${held} MiB" >&2
    sleep "$interval"
  done
  echo "memhog: reached \${held} MiB, holding" >&2
  exec ${FOREVER}
} | tail > /dev/null &
wait
`);

const DISKHOG =
  sh(`# Writes DISKHOG_STEP_MB files into DISKHOG_DIR every DISKHOG_INTERVAL_S seconds until it has
# written DISKHOG_MB (0 = until the disk is full), then keeps them. The default directory is in
# the container's writable layer; point it at a volume to fill that instead.
${STOP_ON_TERM}
total=\${DISKHOG_MB:-256}
step=\${DISKHOG_STEP_MB:-16}
interval=\${DISKHOG_INTERVAL_S:-1}
dir=\${DISKHOG_DIR:-/hog}
mkdir -p "$dir"
written=0
while [ "$total" -eq 0 ] || [ "$written" -lt "$total" ]; do
  dd if=/dev/zero of="$dir/hog-$written" bs=1M count="$step" 2>/dev/null || { echo "diskhog: write failed at \${written} MiB" >&2; break; }
  written=$((written + step))
  echo "diskhog: wrote \${written} MiB" >&2
  sleep "$interval"
done
echo "diskhog: holding \${written} MiB in $dir" >&2
${FOREVER} &
wait
`);

export const RECIPES: Record<ImageName, Recipe> = {
  pause: {
    kind: 'busybox',
    name: 'pause',
    description: 'Pod sandbox image: sleeps until stopped.',
    files: {},
    config: { cmd: ['/bin/sh', '-c', `${STOP_ON_TERM}; ${FOREVER} & wait`] },
  },
  busybox: {
    kind: 'busybox',
    name: 'busybox',
    description: 'A shell and the busybox applets.',
    files: {},
    config: { cmd: ['/bin/sh'] },
  },
  httpd: {
    kind: 'busybox',
    name: 'httpd',
    description: 'busybox httpd serving /www on port 80; /healthz answers 200 while /www/healthz exists.',
    files: {
      '/www/index.html': {
        content: '<!doctype html><title>kh httpd</title><p>kubelet-harness\n',
        mode: 0o644,
      },
      '/www/healthz': { content: 'ok\n', mode: 0o644 },
    },
    config: {
      cmd: ['/bin/sh', '-c', `${STOP_ON_TERM}; httpd -f -p 80 -h /www & wait`],
      exposedPorts: ['80/tcp'],
    },
  },
  memhog: {
    kind: 'busybox',
    name: 'memhog',
    description: 'Grows its memory step by step (MEMHOG_MB, MEMHOG_STEP_MB, MEMHOG_INTERVAL_S).',
    files: { '/bin/memhog': MEMHOG },
    config: { cmd: ['/bin/memhog'] },
  },
  diskhog: {
    kind: 'busybox',
    name: 'diskhog',
    description: 'Writes files step by step (DISKHOG_MB, DISKHOG_STEP_MB, DISKHOG_INTERVAL_S, DISKHOG_DIR).',
    files: { '/bin/diskhog': DISKHOG },
    config: { cmd: ['/bin/diskhog'] },
  },
  node: {
    kind: 'debootstrap',
    name: 'node',
    description:
      'Debian bookworm with containerd, runc, crun, runsc (gVisor), dockerd, CNI plugins and iptables (Node.js comes from the host).',
    suite: 'bookworm',
    variant: 'minbase',
    packages: [
      'containerd',
      'runc',
      // Further OCI runtimes, for containerd runtime handlers (RuntimeClass); see backends/containerd-handlers.
      'crun',
      'runsc',
      'docker.io',
      'iptables',
      'containernetworking-plugins',
      'ca-certificates',
      // tini reaps the shims that get reparented to PID 1; procps/iproute2 for ps, ip, ss.
      'tini',
      'procps',
      'iproute2',
    ],
    config: {
      entrypoint: ['/usr/bin/tini', '--'],
      cmd: ['sleep', 'infinity'],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    },
  },
};

export function isImageName(name: string): name is ImageName {
  return (IMAGE_NAMES as readonly string[]).includes(name);
}
