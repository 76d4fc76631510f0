import {
  any,
  arr,
  bool,
  bytes,
  type Definition,
  INTORSTRING,
  int,
  int64,
  intOrString,
  keyed,
  LISTMETA,
  MICROTIME,
  map,
  microTime,
  OBJECTMETA,
  QUANTITY,
  quantity,
  ref,
  resources,
  type Schema,
  str,
  TIME,
  time,
} from './dsl.js';

const core = (n: string) => `io.k8s.api.core.v1.${n}`;
const metav1 = (n: string) => `io.k8s.apimachinery.pkg.apis.meta.v1.${n}`;
const c = (n: string) => ref(core(n));
const m = (n: string) => ref(metav1(n));
const objectMeta = ref(OBJECTMETA);

/** Every definition the server publishes, keyed by its OpenAPI name. */
export const definitions: Record<string, Definition> = {};

function def(name: string, props: Record<string, Schema>, extra: Omit<Definition, 'props'> = {}) {
  definitions[name] = { props, ...extra };
}

function topLevel(group: string, version: string, kind: string, name: string, props: Record<string, Schema>) {
  def(
    name,
    { apiVersion: str, kind: str, metadata: objectMeta, ...props },
    { gvk: { group, version, kind } },
  );
  def(
    `${name}List`,
    { apiVersion: str, kind: str, metadata: ref(LISTMETA), items: arr(ref(name)) },
    {
      required: ['items'],
      gvk: { group, version, kind: `${kind}List` },
    },
  );
}

// --- scalars with their own names -------------------------------------------------------------
def(QUANTITY, {}, { scalar: { type: 'string' } });
def(TIME, {}, { scalar: { type: 'string', format: 'date-time' } });
def(MICROTIME, {}, { scalar: { type: 'string', format: 'date-time' } });
def(INTORSTRING, {}, { scalar: { type: 'string', format: 'int-or-string' } });

// --- meta/v1 -----------------------------------------------------------------------------------
def(metav1('OwnerReference'), {
  apiVersion: str,
  kind: str,
  name: str,
  uid: str,
  controller: bool,
  blockOwnerDeletion: bool,
});
def(metav1('ManagedFieldsEntry'), {
  manager: str,
  operation: str,
  apiVersion: str,
  time,
  fieldsType: str,
  fieldsV1: any,
  subresource: str,
});
def(OBJECTMETA, {
  name: str,
  generateName: str,
  namespace: str,
  selfLink: str,
  uid: str,
  resourceVersion: str,
  generation: int64,
  creationTimestamp: time,
  deletionTimestamp: time,
  deletionGracePeriodSeconds: int64,
  labels: map(),
  annotations: map(),
  ownerReferences: keyed(m('OwnerReference'), 'uid'),
  finalizers: arr(str, { strategy: 'merge', listType: 'set' }),
  managedFields: arr(m('ManagedFieldsEntry')),
});
def(LISTMETA, { selfLink: str, resourceVersion: str, continue: str, remainingItemCount: int64 });
def(metav1('LabelSelectorRequirement'), { key: str, operator: str, values: arr(str) });
def(metav1('LabelSelector'), {
  matchLabels: map(),
  matchExpressions: arr(m('LabelSelectorRequirement')),
});
def(metav1('Preconditions'), { uid: str, resourceVersion: str });
def(metav1('DeleteOptions'), {
  apiVersion: str,
  kind: str,
  gracePeriodSeconds: int64,
  preconditions: m('Preconditions'),
  orphanDependents: bool,
  propagationPolicy: str,
  dryRun: arr(str),
  ignoreStoreReadErrorWithClusterBreakingPotential: bool,
});
def(metav1('StatusCause'), { reason: str, message: str, field: str });
def(metav1('StatusDetails'), {
  name: str,
  group: str,
  kind: str,
  uid: str,
  causes: arr(m('StatusCause')),
  retryAfterSeconds: int,
});
def(
  metav1('Status'),
  {
    apiVersion: str,
    kind: str,
    metadata: ref(LISTMETA),
    status: str,
    message: str,
    reason: str,
    details: m('StatusDetails'),
    code: int,
  },
  { gvk: { group: '', version: 'v1', kind: 'Status' } },
);
def(metav1('WatchEvent'), { type: str, object: any }, { required: ['type', 'object'] });

// --- core/v1 building blocks -------------------------------------------------------------------
def(core('ObjectReference'), {
  kind: str,
  namespace: str,
  name: str,
  uid: str,
  apiVersion: str,
  resourceVersion: str,
  fieldPath: str,
});
def(core('LocalObjectReference'), { name: str });
def(core('KeyToPath'), { key: str, path: str, mode: int });
def(core('ObjectFieldSelector'), { apiVersion: str, fieldPath: str });
def(core('ResourceFieldSelector'), { containerName: str, resource: str, divisor: quantity });
def(core('ConfigMapKeySelector'), { name: str, key: str, optional: bool });
def(core('SecretKeySelector'), { name: str, key: str, optional: bool });
def(core('FileKeySelector'), { volumeName: str, path: str, key: str, optional: bool });
def(core('EnvVarSource'), {
  fieldRef: c('ObjectFieldSelector'),
  resourceFieldRef: c('ResourceFieldSelector'),
  configMapKeyRef: c('ConfigMapKeySelector'),
  secretKeyRef: c('SecretKeySelector'),
  fileKeyRef: c('FileKeySelector'),
});
def(core('EnvVar'), { name: str, value: str, valueFrom: c('EnvVarSource') }, { required: ['name'] });
def(core('ConfigMapEnvSource'), { name: str, optional: bool });
def(core('SecretEnvSource'), { name: str, optional: bool });
def(core('EnvFromSource'), {
  prefix: str,
  configMapRef: c('ConfigMapEnvSource'),
  secretRef: c('SecretEnvSource'),
});
def(
  core('ContainerPort'),
  { name: str, hostPort: int, containerPort: int, protocol: str, hostIP: str },
  { required: ['containerPort'] },
);
def(core('ResourceClaim'), { name: str, request: str });
def(core('ResourceRequirements'), {
  limits: resources,
  requests: resources,
  claims: keyed(c('ResourceClaim'), 'name'),
});
def(core('ContainerResizePolicy'), { resourceName: str, restartPolicy: str });
def(core('VolumeMount'), {
  name: str,
  readOnly: bool,
  recursiveReadOnly: str,
  mountPath: str,
  subPath: str,
  mountPropagation: str,
  subPathExpr: str,
});
def(core('VolumeDevice'), { name: str, devicePath: str });
def(core('ExecAction'), { command: arr(str) });
def(core('HTTPHeader'), { name: str, value: str });
def(core('HTTPGetAction'), {
  path: str,
  port: intOrString,
  host: str,
  scheme: str,
  httpHeaders: arr(c('HTTPHeader')),
});
def(core('TCPSocketAction'), { port: intOrString, host: str });
def(core('GRPCAction'), { port: int, service: str });
const handler = { exec: c('ExecAction'), httpGet: c('HTTPGetAction'), tcpSocket: c('TCPSocketAction') };
def(core('Probe'), {
  ...handler,
  grpc: c('GRPCAction'),
  initialDelaySeconds: int,
  timeoutSeconds: int,
  periodSeconds: int,
  successThreshold: int,
  failureThreshold: int,
  terminationGracePeriodSeconds: int64,
});
def(core('SleepAction'), { seconds: int64 });
def(core('LifecycleHandler'), { ...handler, sleep: c('SleepAction') });
def(core('Lifecycle'), { postStart: c('LifecycleHandler'), preStop: c('LifecycleHandler'), stopSignal: str });
def(core('Capabilities'), { add: arr(str), drop: arr(str) });
def(core('SELinuxOptions'), { user: str, role: str, type: str, level: str });
def(core('SeccompProfile'), { type: str, localhostProfile: str });
def(core('AppArmorProfile'), { type: str, localhostProfile: str });
def(core('WindowsSecurityContextOptions'), {
  gmsaCredentialSpecName: str,
  gmsaCredentialSpec: str,
  runAsUserName: str,
  hostProcess: bool,
});
def(core('SecurityContext'), {
  capabilities: c('Capabilities'),
  privileged: bool,
  seLinuxOptions: c('SELinuxOptions'),
  windowsOptions: c('WindowsSecurityContextOptions'),
  runAsUser: int64,
  runAsGroup: int64,
  runAsNonRoot: bool,
  readOnlyRootFilesystem: bool,
  allowPrivilegeEscalation: bool,
  procMount: str,
  seccompProfile: c('SeccompProfile'),
  appArmorProfile: c('AppArmorProfile'),
});
def(core('ContainerRestartRule'), { action: str, exitCodes: any });
const containerProps = {
  name: str,
  image: str,
  command: arr(str),
  args: arr(str),
  workingDir: str,
  ports: arr(c('ContainerPort'), {
    mergeKey: 'containerPort',
    strategy: 'merge',
    listType: 'map',
    listMapKeys: ['containerPort', 'protocol'],
  }),
  envFrom: arr(c('EnvFromSource')),
  env: keyed(c('EnvVar'), 'name'),
  resources: c('ResourceRequirements'),
  resizePolicy: arr(c('ContainerResizePolicy'), { listType: 'atomic' }),
  restartPolicy: str,
  restartPolicyRules: arr(c('ContainerRestartRule')),
  volumeMounts: keyed(c('VolumeMount'), 'mountPath'),
  volumeDevices: keyed(c('VolumeDevice'), 'devicePath'),
  livenessProbe: c('Probe'),
  readinessProbe: c('Probe'),
  startupProbe: c('Probe'),
  lifecycle: c('Lifecycle'),
  terminationMessagePath: str,
  terminationMessagePolicy: str,
  imagePullPolicy: str,
  securityContext: c('SecurityContext'),
  stdin: bool,
  stdinOnce: bool,
  tty: bool,
};
def(core('Container'), containerProps, { required: ['name'] });
def(core('EphemeralContainer'), { ...containerProps, targetContainerName: str }, { required: ['name'] });

// Volume sources: the common ones are typed, the rest are kept as opaque JSON.
def(core('HostPathVolumeSource'), { path: str, type: str }, { required: ['path'] });
def(core('EmptyDirVolumeSource'), { medium: str, sizeLimit: quantity });
def(core('SecretVolumeSource'), {
  secretName: str,
  items: arr(c('KeyToPath')),
  defaultMode: int,
  optional: bool,
});
def(core('ConfigMapVolumeSource'), {
  name: str,
  items: arr(c('KeyToPath')),
  defaultMode: int,
  optional: bool,
});
def(core('PersistentVolumeClaimVolumeSource'), { claimName: str, readOnly: bool });
def(core('DownwardAPIVolumeFile'), {
  path: str,
  fieldRef: c('ObjectFieldSelector'),
  resourceFieldRef: c('ResourceFieldSelector'),
  mode: int,
});
def(core('DownwardAPIVolumeSource'), { items: arr(c('DownwardAPIVolumeFile')), defaultMode: int });
def(core('ProjectedVolumeSource'), { sources: arr(any), defaultMode: int });
def(core('ImageVolumeSource'), { reference: str, pullPolicy: str });
def(
  core('Volume'),
  {
    name: str,
    hostPath: c('HostPathVolumeSource'),
    emptyDir: c('EmptyDirVolumeSource'),
    secret: c('SecretVolumeSource'),
    configMap: c('ConfigMapVolumeSource'),
    persistentVolumeClaim: c('PersistentVolumeClaimVolumeSource'),
    downwardAPI: c('DownwardAPIVolumeSource'),
    projected: c('ProjectedVolumeSource'),
    image: c('ImageVolumeSource'),
    nfs: any,
    iscsi: any,
    csi: any,
    ephemeral: any,
    fc: any,
    cephfs: any,
    rbd: any,
    flexVolume: any,
    cinder: any,
    awsElasticBlockStore: any,
    gcePersistentDisk: any,
    gitRepo: any,
    glusterfs: any,
    azureFile: any,
    azureDisk: any,
    vsphereVolume: any,
    quobyte: any,
    photonPersistentDisk: any,
    portworxVolume: any,
    scaleIO: any,
    storageos: any,
    flocker: any,
  },
  { required: ['name'], strategy: 'retainKeys' },
);
def(core('Toleration'), { key: str, operator: str, value: str, effect: str, tolerationSeconds: int64 });
def(core('Taint'), { key: str, value: str, effect: str, timeAdded: time }, { required: ['key', 'effect'] });
def(core('NodeSelectorRequirement'), { key: str, operator: str, values: arr(str) });
def(core('NodeSelectorTerm'), {
  matchExpressions: arr(c('NodeSelectorRequirement')),
  matchFields: arr(c('NodeSelectorRequirement')),
});
def(core('NodeSelector'), { nodeSelectorTerms: arr(c('NodeSelectorTerm')) });
def(core('PreferredSchedulingTerm'), { weight: int, preference: c('NodeSelectorTerm') });
def(core('NodeAffinity'), {
  requiredDuringSchedulingIgnoredDuringExecution: c('NodeSelector'),
  preferredDuringSchedulingIgnoredDuringExecution: arr(c('PreferredSchedulingTerm')),
});
def(core('Affinity'), { nodeAffinity: c('NodeAffinity'), podAffinity: any, podAntiAffinity: any });
def(core('PodDNSConfigOption'), { name: str, value: str });
def(core('PodDNSConfig'), {
  nameservers: arr(str),
  searches: arr(str),
  options: arr(c('PodDNSConfigOption')),
});
def(core('HostAlias'), { ip: str, hostnames: arr(str) });
def(core('Sysctl'), { name: str, value: str });
def(core('PodSecurityContext'), {
  seLinuxOptions: c('SELinuxOptions'),
  windowsOptions: c('WindowsSecurityContextOptions'),
  runAsUser: int64,
  runAsGroup: int64,
  runAsNonRoot: bool,
  supplementalGroups: arr(int64),
  supplementalGroupsPolicy: str,
  fsGroup: int64,
  sysctls: arr(c('Sysctl')),
  fsGroupChangePolicy: str,
  seccompProfile: c('SeccompProfile'),
  appArmorProfile: c('AppArmorProfile'),
  seLinuxChangePolicy: str,
});
def(core('PodReadinessGate'), { conditionType: str });
def(core('PodOS'), { name: str });
def(core('PodSchedulingGate'), { name: str });
def(core('PodResourceClaim'), { name: str, resourceClaimName: str, resourceClaimTemplateName: str });
def(core('TopologySpreadConstraint'), {
  maxSkew: int,
  topologyKey: str,
  whenUnsatisfiable: str,
  labelSelector: m('LabelSelector'),
  minDomains: int,
  nodeAffinityPolicy: str,
  nodeTaintsPolicy: str,
  matchLabelKeys: arr(str),
});
def(core('PodSpec'), {
  volumes: arr(c('Volume'), {
    mergeKey: 'name',
    strategy: 'merge,retainKeys',
    listType: 'map',
    listMapKeys: ['name'],
  }),
  initContainers: keyed(c('Container'), 'name'),
  containers: keyed(c('Container'), 'name'),
  ephemeralContainers: keyed(c('EphemeralContainer'), 'name'),
  restartPolicy: str,
  terminationGracePeriodSeconds: int64,
  activeDeadlineSeconds: int64,
  dnsPolicy: str,
  nodeSelector: map(),
  serviceAccountName: str,
  serviceAccount: str,
  automountServiceAccountToken: bool,
  nodeName: str,
  hostNetwork: bool,
  hostPID: bool,
  hostIPC: bool,
  shareProcessNamespace: bool,
  securityContext: c('PodSecurityContext'),
  imagePullSecrets: keyed(c('LocalObjectReference'), 'name'),
  hostname: str,
  subdomain: str,
  affinity: c('Affinity'),
  schedulerName: str,
  tolerations: arr(c('Toleration')),
  hostAliases: keyed(c('HostAlias'), 'ip'),
  priorityClassName: str,
  priority: int,
  dnsConfig: c('PodDNSConfig'),
  readinessGates: arr(c('PodReadinessGate')),
  runtimeClassName: str,
  enableServiceLinks: bool,
  preemptionPolicy: str,
  overhead: resources,
  topologySpreadConstraints: arr(c('TopologySpreadConstraint'), {
    mergeKey: 'topologyKey',
    strategy: 'merge',
    listType: 'map',
    listMapKeys: ['topologyKey', 'whenUnsatisfiable'],
  }),
  setHostnameAsFQDN: bool,
  os: c('PodOS'),
  hostUsers: bool,
  schedulingGates: keyed(c('PodSchedulingGate'), 'name'),
  resourceClaims: arr(c('PodResourceClaim'), {
    mergeKey: 'name',
    strategy: 'merge,retainKeys',
    listType: 'map',
    listMapKeys: ['name'],
  }),
  resources: c('ResourceRequirements'),
  hostnameOverride: str,
});
def(core('PodCondition'), {
  type: str,
  observedGeneration: int64,
  status: str,
  lastProbeTime: time,
  lastTransitionTime: time,
  reason: str,
  message: str,
});
def(core('ContainerStateWaiting'), { reason: str, message: str });
def(core('ContainerStateRunning'), { startedAt: time });
def(core('ContainerStateTerminated'), {
  exitCode: int,
  signal: int,
  reason: str,
  message: str,
  startedAt: time,
  finishedAt: time,
  containerID: str,
});
def(core('ContainerState'), {
  waiting: c('ContainerStateWaiting'),
  running: c('ContainerStateRunning'),
  terminated: c('ContainerStateTerminated'),
});
def(core('ContainerStatus'), {
  name: str,
  state: c('ContainerState'),
  lastState: c('ContainerState'),
  ready: bool,
  restartCount: int,
  image: str,
  imageID: str,
  containerID: str,
  started: bool,
  allocatedResources: resources,
  resources: c('ResourceRequirements'),
  volumeMounts: arr(any),
  user: any,
  allocatedResourcesStatus: arr(any),
  stopSignal: str,
});
def(core('PodIP'), { ip: str });
def(core('HostIP'), { ip: str });
def(core('PodStatus'), {
  observedGeneration: int64,
  phase: str,
  conditions: keyed(c('PodCondition'), 'type'),
  message: str,
  reason: str,
  nominatedNodeName: str,
  hostIP: str,
  hostIPs: keyed(c('HostIP'), 'ip'),
  podIP: str,
  podIPs: keyed(c('PodIP'), 'ip'),
  startTime: time,
  initContainerStatuses: arr(c('ContainerStatus')),
  containerStatuses: arr(c('ContainerStatus')),
  qosClass: str,
  ephemeralContainerStatuses: arr(c('ContainerStatus')),
  resize: str,
  resourceClaimStatuses: arr(any),
});
topLevel('', 'v1', 'Pod', core('Pod'), { spec: c('PodSpec'), status: c('PodStatus') });
def(
  core('Binding'),
  { apiVersion: str, kind: str, metadata: objectMeta, target: c('ObjectReference') },
  {
    gvk: { group: '', version: 'v1', kind: 'Binding' },
  },
);
def(
  'io.k8s.api.policy.v1.Eviction',
  { apiVersion: str, kind: str, metadata: objectMeta, deleteOptions: m('DeleteOptions') },
  { gvk: { group: 'policy', version: 'v1', kind: 'Eviction' } },
);

// --- nodes --------------------------------------------------------------------------------------
def(core('ConfigMapNodeConfigSource'), {
  namespace: str,
  name: str,
  uid: str,
  resourceVersion: str,
  kubeletConfigKey: str,
});
def(core('NodeConfigSource'), { configMap: c('ConfigMapNodeConfigSource') });
def(core('NodeSpec'), {
  podCIDR: str,
  podCIDRs: arr(str, { strategy: 'merge', listType: 'set' }),
  providerID: str,
  unschedulable: bool,
  taints: arr(c('Taint')),
  configSource: c('NodeConfigSource'),
  externalID: str,
});
def(core('NodeCondition'), {
  type: str,
  status: str,
  lastHeartbeatTime: time,
  lastTransitionTime: time,
  reason: str,
  message: str,
});
def(core('NodeAddress'), { type: str, address: str });
def(core('DaemonEndpoint'), { Port: int });
def(core('NodeDaemonEndpoints'), { kubeletEndpoint: c('DaemonEndpoint') });
def(core('NodeSystemInfo'), {
  machineID: str,
  systemUUID: str,
  bootID: str,
  kernelVersion: str,
  osImage: str,
  containerRuntimeVersion: str,
  kubeletVersion: str,
  kubeProxyVersion: str,
  operatingSystem: str,
  architecture: str,
  swap: any,
});
def(core('ContainerImage'), { names: arr(str), sizeBytes: int64 });
def(core('AttachedVolume'), { name: str, devicePath: str });
def(core('NodeStatus'), {
  capacity: resources,
  allocatable: resources,
  phase: str,
  conditions: keyed(c('NodeCondition'), 'type'),
  addresses: keyed(c('NodeAddress'), 'type'),
  daemonEndpoints: c('NodeDaemonEndpoints'),
  nodeInfo: c('NodeSystemInfo'),
  images: arr(c('ContainerImage')),
  volumesInUse: arr(str),
  volumesAttached: arr(c('AttachedVolume')),
  config: any,
  runtimeHandlers: arr(any),
  features: any,
  declaredFeatures: arr(str),
});
topLevel('', 'v1', 'Node', core('Node'), { spec: c('NodeSpec'), status: c('NodeStatus') });

// --- the small core resources -----------------------------------------------------------------
def(core('NamespaceSpec'), { finalizers: arr(str) });
def(core('NamespaceCondition'), {
  type: str,
  status: str,
  lastTransitionTime: time,
  reason: str,
  message: str,
});
def(core('NamespaceStatus'), { phase: str, conditions: keyed(c('NamespaceCondition'), 'type') });
topLevel('', 'v1', 'Namespace', core('Namespace'), {
  spec: c('NamespaceSpec'),
  status: c('NamespaceStatus'),
});
topLevel('', 'v1', 'ConfigMap', core('ConfigMap'), { data: map(), binaryData: map(bytes), immutable: bool });
topLevel('', 'v1', 'Secret', core('Secret'), {
  data: map(bytes),
  stringData: map(),
  type: str,
  immutable: bool,
});
topLevel('', 'v1', 'ServiceAccount', core('ServiceAccount'), {
  secrets: keyed(c('ObjectReference'), 'name'),
  imagePullSecrets: arr(c('LocalObjectReference')),
  automountServiceAccountToken: bool,
});
def(core('ServicePort'), {
  name: str,
  protocol: str,
  appProtocol: str,
  port: int,
  targetPort: intOrString,
  nodePort: int,
});
def(core('ServiceSpec'), {
  ports: keyed(c('ServicePort'), 'port'),
  selector: map(),
  clusterIP: str,
  clusterIPs: arr(str),
  type: str,
  externalIPs: arr(str),
  sessionAffinity: str,
  externalName: str,
  externalTrafficPolicy: str,
  internalTrafficPolicy: str,
  ipFamilies: arr(str),
  ipFamilyPolicy: str,
  publishNotReadyAddresses: bool,
});
topLevel('', 'v1', 'Service', core('Service'), { spec: c('ServiceSpec'), status: any });
def(core('EventSource'), { component: str, host: str });
def(core('EventSeries'), { count: int, lastObservedTime: microTime });
topLevel('', 'v1', 'Event', core('Event'), {
  involvedObject: c('ObjectReference'),
  reason: str,
  message: str,
  source: c('EventSource'),
  firstTimestamp: time,
  lastTimestamp: time,
  count: int,
  type: str,
  eventTime: microTime,
  series: c('EventSeries'),
  action: str,
  related: c('ObjectReference'),
  reportingComponent: str,
  reportingInstance: str,
});
def('io.k8s.api.events.v1.EventSeries', { count: int, lastObservedTime: microTime });
topLevel('events.k8s.io', 'v1', 'Event', 'io.k8s.api.events.v1.Event', {
  eventTime: microTime,
  series: ref('io.k8s.api.events.v1.EventSeries'),
  reportingController: str,
  reportingInstance: str,
  action: str,
  reason: str,
  regarding: c('ObjectReference'),
  related: c('ObjectReference'),
  note: str,
  type: str,
  deprecatedSource: c('EventSource'),
  deprecatedFirstTimestamp: time,
  deprecatedLastTimestamp: time,
  deprecatedCount: int,
});
def('io.k8s.api.coordination.v1.LeaseSpec', {
  holderIdentity: str,
  leaseDurationSeconds: int,
  acquireTime: microTime,
  renewTime: microTime,
  leaseTransitions: int,
  strategy: str,
  preferredHolder: str,
});
topLevel('coordination.k8s.io', 'v1', 'Lease', 'io.k8s.api.coordination.v1.Lease', {
  spec: ref('io.k8s.api.coordination.v1.LeaseSpec'),
});

// --- node.k8s.io ----------------------------------------------------------------------------------
def('io.k8s.api.node.v1.Overhead', { podFixed: resources });
def('io.k8s.api.node.v1.Scheduling', { nodeSelector: map(), tolerations: arr(c('Toleration')) });
topLevel('node.k8s.io', 'v1', 'RuntimeClass', 'io.k8s.api.node.v1.RuntimeClass', {
  handler: str,
  overhead: ref('io.k8s.api.node.v1.Overhead'),
  scheduling: ref('io.k8s.api.node.v1.Scheduling'),
});

// --- scheduling.k8s.io ---------------------------------------------------------------------------
topLevel('scheduling.k8s.io', 'v1', 'PriorityClass', 'io.k8s.api.scheduling.v1.PriorityClass', {
  value: int,
  globalDefault: bool,
  description: str,
  preemptionPolicy: str,
});

// --- authentication.k8s.io ------------------------------------------------------------------------
def('io.k8s.api.authentication.v1.UserInfo', {
  username: str,
  uid: str,
  groups: arr(str),
  extra: map(arr(str)),
});
def('io.k8s.api.authentication.v1.SelfSubjectReviewStatus', {
  userInfo: ref('io.k8s.api.authentication.v1.UserInfo'),
});
def(
  'io.k8s.api.authentication.v1.SelfSubjectReview',
  {
    apiVersion: str,
    kind: str,
    metadata: objectMeta,
    status: ref('io.k8s.api.authentication.v1.SelfSubjectReviewStatus'),
  },
  { gvk: { group: 'authentication.k8s.io', version: 'v1', kind: 'SelfSubjectReview' } },
);
def(
  'io.k8s.api.authentication.v1beta1.SelfSubjectReview',
  {
    apiVersion: str,
    kind: str,
    metadata: objectMeta,
    status: ref('io.k8s.api.authentication.v1.SelfSubjectReviewStatus'),
  },
  { gvk: { group: 'authentication.k8s.io', version: 'v1beta1', kind: 'SelfSubjectReview' } },
);

// TokenReview and the access reviews: create-only, answered from the request.
def('io.k8s.api.authentication.v1.TokenReviewSpec', { token: str, audiences: arr(str) });
def('io.k8s.api.authentication.v1.TokenReviewStatus', {
  authenticated: bool,
  user: ref('io.k8s.api.authentication.v1.UserInfo'),
  audiences: arr(str),
  error: str,
});
def(
  'io.k8s.api.authentication.v1.TokenReview',
  {
    apiVersion: str,
    kind: str,
    metadata: objectMeta,
    spec: ref('io.k8s.api.authentication.v1.TokenReviewSpec'),
    status: ref('io.k8s.api.authentication.v1.TokenReviewStatus'),
  },
  { gvk: { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenReview' } },
);

// --- authorization.k8s.io -------------------------------------------------------------------------
const authz = (n: string) => `io.k8s.api.authorization.v1.${n}`;
def(authz('ResourceAttributes'), {
  namespace: str,
  verb: str,
  group: str,
  version: str,
  resource: str,
  subresource: str,
  name: str,
});
def(authz('NonResourceAttributes'), { path: str, verb: str });
def(authz('SubjectAccessReviewSpec'), {
  resourceAttributes: ref(authz('ResourceAttributes')),
  nonResourceAttributes: ref(authz('NonResourceAttributes')),
  user: str,
  groups: arr(str),
  extra: map(arr(str)),
  uid: str,
});
def(authz('SelfSubjectAccessReviewSpec'), {
  resourceAttributes: ref(authz('ResourceAttributes')),
  nonResourceAttributes: ref(authz('NonResourceAttributes')),
});
def(authz('SubjectAccessReviewStatus'), {
  allowed: bool,
  denied: bool,
  reason: str,
  evaluationError: str,
});
for (const kind of ['SubjectAccessReview', 'SelfSubjectAccessReview']) {
  def(
    authz(kind),
    {
      apiVersion: str,
      kind: str,
      metadata: objectMeta,
      spec: ref(authz(`${kind}Spec`)),
      status: ref(authz('SubjectAccessReviewStatus')),
    },
    { gvk: { group: 'authorization.k8s.io', version: 'v1', kind } },
  );
}

// --- rbac.authorization.k8s.io --------------------------------------------------------------------
const rbac = (n: string) => `io.k8s.api.rbac.v1.${n}`;
def(rbac('PolicyRule'), {
  verbs: arr(str),
  apiGroups: arr(str),
  resources: arr(str),
  resourceNames: arr(str),
  nonResourceURLs: arr(str),
});
def(rbac('Subject'), { kind: str, apiGroup: str, name: str, namespace: str });
def(rbac('RoleRef'), { apiGroup: str, kind: str, name: str });
def(rbac('AggregationRule'), { clusterRoleSelectors: arr(m('LabelSelector')) });
topLevel('rbac.authorization.k8s.io', 'v1', 'Role', rbac('Role'), { rules: arr(ref(rbac('PolicyRule'))) });
topLevel('rbac.authorization.k8s.io', 'v1', 'ClusterRole', rbac('ClusterRole'), {
  rules: arr(ref(rbac('PolicyRule'))),
  aggregationRule: ref(rbac('AggregationRule')),
});
for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
  topLevel('rbac.authorization.k8s.io', 'v1', kind, rbac(kind), {
    subjects: arr(ref(rbac('Subject'))),
    roleRef: ref(rbac('RoleRef')),
  });
}
