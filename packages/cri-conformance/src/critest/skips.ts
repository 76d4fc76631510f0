/**
 * critest specs that cannot tell anything about a runtime on a machine without a registry, with the
 * local test images: each is skipped on every endpoint alike, with its reason in the table.
 * `spec` is a literal piece of the spec's full text (what ginkgo's --ginkgo.skip matches).
 */
export interface CritestSkip {
  spec: string;
  reason: string;
}

const publicImage = (image: string) =>
  `pulls the public image ${image}: no registry can be reached here (and the lookup alone leaves the machine)`;

export const CRITEST_SKIPS: readonly CritestSkip[] = [
  { spec: 'Image Manager', reason: publicImage('gcr.io/k8s-staging-cri-tools/test-image-*') },
  { spec: 'runtime should support HostPID', reason: publicImage('docker.io/library/nginx:1.18') },
  { spec: 'runtime should support PodPID', reason: publicImage('docker.io/library/nginx:1.18') },
  { spec: 'runtime should support ContainerPID', reason: publicImage('docker.io/library/nginx:1.18') },
  {
    spec: "if the container's primary UID belongs to some groups in the image",
    reason: publicImage('gcr.io/k8s-staging-cri-tools/test-image-predefined-group'),
  },
  { spec: 'NoNewPrivs', reason: publicImage('k8s.gcr.io/e2e-test-images/nonewprivs:1.3') },
  {
    spec: 'runtime should support portforward in host network',
    reason: publicImage('gcr.io/k8s-staging-cri-tools/hostnet-nginx-amd64'),
  },
  { spec: 'Multiple Containers', reason: publicImage('docker.io/library/httpd') },
  {
    spec: 'runtime should support execSync with timeout',
    reason:
      'checks for the killed process with pgrep, which Debian\'s busybox (the test image) lacks: "sh: pgrep: not found"',
  },
  {
    spec: 'runtime should support HostIpc',
    reason:
      "runs ipcs in the container, which Debian's busybox lacks, after ipcmk on the host, which the spec never removes",
  },
  {
    spec: 'runtime should support MaskedPaths',
    reason:
      'masks /bin/ls, a symlink to /bin/busybox in the test image, so the mask hides sh too: "exec: \\"sh\\": executable file not found"',
  },
];

/** The literal as a regular expression that Go's RE2 (ginkgo) and JavaScript read alike. */
export function literalPattern(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

export function skipReason(specText: string, skips: readonly CritestSkip[]): string | undefined {
  return skips.find((s) => specText.includes(s.spec))?.reason;
}
