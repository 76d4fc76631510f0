// Public surface of @kh/cri-api.

export * from './api/errors.js';
export {
  type CriMethodInfo,
  type CriMethodKey,
  criMethods,
  type RequestOf,
  type ResponseOf,
} from './api/methods.js';
export {
  type CriCallEvent,
  type CriCallOptions,
  type CriCalls,
  CriClient,
  type CriClientOptions,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_CRI_TIMEOUT_MS,
} from './client/client.js';
export { type CriEndpoint, EndpointError, parseEndpoint } from './client/endpoint.js';
export { FakeRuntime, type FakeRuntimeOptions, type RecordedCall } from './fake/fake_runtime.js';
export type {
  ContainerExitScript,
  ContainerInfo,
  ContainerMatcher,
  ContainerStatsScript,
  ExecMatcher,
  ExecScript,
  FakeScript,
  PullFailure,
} from './fake/script.js';
export type { ImageFsScript } from './fake/state.js';
export {
  type CriFuzzCase,
  type CriFuzzOptions,
  type CriFuzzReply,
  type CriFuzzRun,
  CriFuzzTally,
  criFuzzCases,
  hostileString,
  invalidImageRef,
  PRECISE_CODES,
  RawCriClient,
  runCriFuzz,
} from './fuzz/cri_fuzz.js';
export * from './gen/runtime/v1/api.js';
export type { ConnectionPath } from './server/h2_opening.js';
export {
  CRI_MAX_REQUEST_BYTES,
  type CriBackend,
  type CriCallContext,
  type CriImageHandlers,
  type CriRuntimeHandlers,
  type CriServer,
  type ServeCriOptions,
  serveCri,
} from './server/serve.js';
export { SOCKET_MODE } from './server/socket.js';
