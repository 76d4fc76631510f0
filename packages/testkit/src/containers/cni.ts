/**
 * The pod network of every kind-style node, whatever its runtime: one CNI config template that
 * the runtime fills with the node's pod CIDR when the agent passes it on (CRI
 * UpdateRuntimeConfig, from the Node's spec.podCIDRs), as a real node gets its range from
 * kube-controller-manager. containerd reads it through its CRI plugin's `conf_template`, our
 * dockershim through `--cni-conf-template`; both write the result into CNI_CONF_DIR.
 */

/** Debian's containernetworking-plugins install here. */
export const CNI_BIN_DIR = '/usr/lib/cni';
/** Where runtimes look for (and write) the node's CNI config. */
export const CNI_CONF_DIR = '/etc/cni/net.d';
/** The template in a node, outside CNI_CONF_DIR so that no runtime takes it for a config. */
export const CNI_CONF_TEMPLATE_PATH = '/etc/kh/cni-conf.template';

/**
 * bridge + host-local on the node's pod CIDRs (one range per IP family, containerd's dual-stack
 * form) + portmap for hostPorts + firewall. Loopback is not in the list: each runtime brings `lo`
 * up with the loopback plugin as a network of its own (chained, it would configure eth0). The
 * firewall plugin adds the FORWARD accept rules pod-to-pod traffic over the bridge needs where a
 * dockerd in the node has set the FORWARD policy to DROP.
 */
export const CNI_CONF_TEMPLATE = `{
  "cniVersion": "0.4.0",
  "name": "kh-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [{{range $i, $range := .PodCIDRRanges}}{{if $i}}, {{end}}[{ "subnet": "{{$range}}" }]{{end}}],
        "routes": [{{range $i, $route := .Routes}}{{if $i}}, {{end}}{ "dst": "{{$route}}" }{{end}}]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "firewall" }
  ]
}
`;

/** The dockershim's flags for this network in a node (cri-dockerd's flag names, plus our template). */
export const DOCKERSHIM_CNI_FLAGS: readonly string[] = [
  '--network-plugin=cni',
  `--cni-bin-dir=${CNI_BIN_DIR}`,
  `--cni-conf-dir=${CNI_CONF_DIR}`,
  `--cni-conf-template=${CNI_CONF_TEMPLATE_PATH}`,
];
