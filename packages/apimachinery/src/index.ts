export { type Clock, FakeClock, flushMicrotasks, realClock, sleep, type TimerClock } from './clock/clock.js';
export {
  demuxBuffer,
  type Frame,
  FrameDecoder,
  type FramePiece,
  FrameSplitter,
  StreamType,
} from './docker/stream.js';
export { SPLICE_CLOSE_GRACE_MS, spliceConnections } from './proxy/splice.js';
export {
  DefaultImageTag,
  DockerHubDomain,
  type ImageReference,
  InvalidImageNameError,
  normalizeImageRef,
  parseImageReference,
  registryHostOf,
  splitImageReference,
} from './reference/image_ref.js';
export { verbForMethod } from './request/verb.js';
export { isExtendedResourceName, isHugePageResourceName, isNativeResource } from './resource/names.js';
export { Quantity, QuantityError, type QuantityFormat } from './resource/quantity.js';
export {
  type AffinityNode,
  type AffinityPod,
  type NodeSelector,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  nodeSelectorMatches,
  nodeSelectorRequirementMatches,
  nodeSelectorTermMatches,
  ObjectNameField,
  podMatchesNodeAffinity,
} from './scheduling/node_affinity.js';
export {
  findMatchingUntoleratedTaint,
  type Taint,
  type Toleration,
  toleratesTaint,
  tolerationsTolerateTaint,
} from './scheduling/taints.js';
export {
  aggregateMessage,
  ErrorList,
  type ErrorType,
  errorBody,
  type FieldError,
  formatFieldError,
} from './validation/field/errors.js';
export { qualifiedNameProblem } from './validation/qualified_name.js';
