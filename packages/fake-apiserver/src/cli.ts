#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import type { PodSecurityConfiguration } from './admission/podsecurity.js';
import { parseAuthorizationModes } from './auth/authorizer.js';
import { readyLine } from './command.js';
import { MAX_YAML_DEPTH } from './http/body.js';
import { MAX_BUFFERED } from './http/watch.js';
import { MAX_DEPTH } from './meta/depth.js';
import { parseFeatureGates, setFeatureGates } from './meta/features.js';
import type { KObject } from './meta/object.js';
import { createApiServer, LIMITS } from './server.js';

const USAGE = `Usage: fake-apiserver [options]
  --port <n>                 port to listen on (default 6443; 0 picks one)
  --host <addr>              listen address (default 127.0.0.1)
  --data-dir <dir>           durable storage (WAL + snapshot); in memory without it
  --token-file <file>        bearer tokens, kube-apiserver CSV format: token,user,uid[,"group1,group2"]
  --anonymous                allow requests without a token
  --insecure-allow-unauthenticated-remote
                             serve a non-loopback --host although unauthenticated clients may do
                             everything (no --token-file, or --anonymous with AlwaysAllow); without
                             it such a server refuses to start
  --api-audiences <a,b>      audiences a token must be for to authenticate (default: the service
                             account issuer, https://kubernetes.default.svc.cluster.local)
  --admission-control-config-file <file>  kube-apiserver's AdmissionConfiguration (YAML or JSON);
                             its PodSecurity plugin's PodSecurityConfiguration (defaults,
                             exemptions) is read; audit-level violations are printed to stderr
  --authorization-mode <m>   comma list asked in order: AlwaysAllow (default), Node, RBAC;
                             Node also enables the NodeRestriction admission plugin
                             (kubeadm's choice: Node,RBAC)
  --tls                      serve HTTPS with a generated CA (put into the kubeconfig)
  --tls-host <name>          extra SAN for the serving certificate (repeatable)
  --kubelet-client-certificate <file>  client certificate for kubelets (PEM); with --tls and
                             without it, one is issued from the CA: CN kube-apiserver-kubelet-client,
                             O system:masters
  --kubelet-client-key <file>  its key (PEM)
  --kubelet-certificate-authority <file>  CA to verify kubelets' serving certificates (unverified without)
  --ca-cert-out <file>       write the CA (PEM) that signed the serving and kubelet client
                             certificates: a kubelet's --client-ca-file
  --lease-grace-seconds <n>  node lease grace period before conditions go Unknown (default 40)
  --event-ttl-seconds <n>    how long events are kept (default 3600)
  --allocate-node-cidrs      kube-controller-manager's node IPAM: give each node without one a pod
                             CIDR (spec.podCIDR, spec.podCIDRs) from --cluster-cidr
  --cluster-cidr <cidrs>     the pods' range, one CIDR or one per IP family (e.g. 10.244.0.0/16)
  --node-cidr-mask-size <n>  size of each node's subnet, single-stack (default 24 for IPv4, 64 for IPv6)
  --node-cidr-mask-size-ipv4 <n>, --node-cidr-mask-size-ipv6 <n>  the same per family, for dual-stack
  --feature-gates <g=bool,..>  kube-apiserver's feature gates this server acts on:
                             ContainerRestartRules (alpha in 1.34, off by default)
  --print-kubeconfig         print a kubeconfig for this server on stdout
  --kubeconfig-out <file>    also write the kubeconfig to a file
  --kubeconfig-server <url>  server URL to put in the kubeconfig (e.g. https://apiserver:6443)
  -h, --help

Limits (what a hostile or broken client gets):
  request body               ${LIMITS.maxBodyBytes / 1024 / 1024} MiB (413 above), JSON nested at most ${MAX_DEPTH} levels, YAML ${MAX_YAML_DEPTH} (400)
  request headers            ${LIMITS.maxHeaderBytes / 1024} KiB (431 above), sent within ${LIMITS.headersTimeoutSeconds} s
  whole request              received within ${LIMITS.requestTimeoutSeconds} s (408 and disconnected after)
  connections                ${LIMITS.maxConnections} open at once (more are closed on arrival); idle keep-alive ${LIMITS.keepAliveSeconds} s
  watches                    ${LIMITS.maxWatches} open at once, ${LIMITS.maxWatchesPerUser} per user (429 above); each ends after its
                             timeoutSeconds (at most ${LIMITS.maxWatchTimeoutSeconds / 3600} h) or a random ${LIMITS.maxWatchSeconds / 2 / 60}-${LIMITS.maxWatchSeconds / 60} min; a watcher that
                             stops reading is cut off at ${MAX_BUFFERED / 1024 / 1024} MiB buffered`;

/** The PodSecurity plugin's configuration out of kube-apiserver's AdmissionConfiguration file. */
function podSecurityConfig(file: string | undefined): PodSecurityConfiguration | undefined {
  if (file === undefined) return undefined;
  const doc = parseYaml(readFileSync(file, 'utf8')) as KObject | null;
  if (doc?.kind !== 'AdmissionConfiguration')
    throw new Error(`--admission-control-config-file: ${file} is not an AdmissionConfiguration`);
  const plugin = (doc.plugins ?? []).find((p: KObject) => p?.name === 'PodSecurity');
  if (plugin === undefined) return undefined;
  if (plugin.path !== undefined)
    throw new Error(
      '--admission-control-config-file: give PodSecurity its configuration inline, not as a path',
    );
  if (plugin.configuration?.kind !== 'PodSecurityConfiguration')
    throw new Error('--admission-control-config-file: PodSecurity needs a PodSecurityConfiguration');
  return plugin.configuration;
}

function seconds(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag}: not a positive number of seconds: ${v}`);
  return n;
}

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '6443' },
      host: { type: 'string', default: '127.0.0.1' },
      'data-dir': { type: 'string' },
      'token-file': { type: 'string' },
      anonymous: { type: 'boolean', default: false },
      'insecure-allow-unauthenticated-remote': { type: 'boolean', default: false },
      'api-audiences': { type: 'string' },
      'admission-control-config-file': { type: 'string' },
      'authorization-mode': { type: 'string', default: 'AlwaysAllow' },
      tls: { type: 'boolean', default: false },
      'tls-host': { type: 'string', multiple: true },
      'kubelet-client-certificate': { type: 'string' },
      'kubelet-client-key': { type: 'string' },
      'kubelet-certificate-authority': { type: 'string' },
      'ca-cert-out': { type: 'string' },
      'lease-grace-seconds': { type: 'string' },
      'event-ttl-seconds': { type: 'string' },
      'allocate-node-cidrs': { type: 'boolean', default: false },
      'cluster-cidr': { type: 'string' },
      'node-cidr-mask-size': { type: 'string' },
      'node-cidr-mask-size-ipv4': { type: 'string' },
      'node-cidr-mask-size-ipv6': { type: 'string' },
      'feature-gates': { type: 'string' },
      'print-kubeconfig': { type: 'boolean', default: false },
      'kubeconfig-out': { type: 'string' },
      'kubeconfig-server': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: not a port: ${values.port}`);
  const modes = parseAuthorizationModes(values['authorization-mode']);
  if (values['feature-gates'] !== undefined) setFeatureGates(parseFeatureGates(values['feature-gates']));
  const cert = values['kubelet-client-certificate'];
  const key = values['kubelet-client-key'];
  if ((cert === undefined) !== (key === undefined))
    throw new Error('--kubelet-client-certificate and --kubelet-client-key go together');
  const read = (f: string | undefined) => (f === undefined ? undefined : readFileSync(f, 'utf8'));
  const maskSize = (flag: string): number | undefined => {
    const v = values[flag as keyof typeof values] as string | undefined;
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new Error(`--${flag}: not a number: ${v}`);
    return Number(v);
  };
  const server = await createApiServer({
    port,
    host: values.host,
    dataDir: values['data-dir'],
    tokens: values['token-file'],
    anonymous: values.anonymous,
    allowUnauthenticatedRemote: values['insecure-allow-unauthenticated-remote'],
    apiAudiences: values['api-audiences']?.split(',').filter((a) => a !== ''),
    podSecurity: podSecurityConfig(values['admission-control-config-file']),
    onPodSecurityAudit: (r) =>
      console.error(
        `podsecurity audit: user "${r.user}" pod "${r.namespace}/${r.name}" violates PodSecurity "${r.policy}": ${r.violations}`,
      ),
    authorizationMode: modes,
    tls: values.tls,
    tlsHosts: values['tls-host'],
    kubeletClient: {
      certPem: read(cert),
      keyPem: read(key),
      caPem: read(values['kubelet-certificate-authority']),
    },
    leaseGraceSeconds: seconds(values['lease-grace-seconds'], '--lease-grace-seconds'),
    eventTtlSeconds: seconds(values['event-ttl-seconds'], '--event-ttl-seconds'),
    ...(values['allocate-node-cidrs']
      ? {
          nodeIpam: {
            clusterCidr: values['cluster-cidr'] ?? '',
            nodeCidrMaskSize: maskSize('node-cidr-mask-size'),
            nodeCidrMaskSizeIPv4: maskSize('node-cidr-mask-size-ipv4'),
            nodeCidrMaskSizeIPv6: maskSize('node-cidr-mask-size-ipv6'),
          },
        }
      : {}),
  });
  if (values['ca-cert-out']) {
    if (server.caPem === undefined) throw new Error('--ca-cert-out needs --tls');
    writeFileSync(values['ca-cert-out'], server.caPem);
  }
  const kubeconfig = server.kubeconfig({ server: values['kubeconfig-server'] });
  if (values['kubeconfig-out']) writeFileSync(values['kubeconfig-out'], kubeconfig, { mode: 0o600 });
  if (values['print-kubeconfig']) process.stdout.write(kubeconfig);
  console.error(readyLine(server.url));
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((e: Error) => {
  console.error(`fake-apiserver: ${e.message}`);
  process.exit(1);
});
