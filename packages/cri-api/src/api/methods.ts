import {
  type DeepPartial,
  ImageServiceDefinition,
  type MessageFns,
  RuntimeServiceDefinition,
} from '../gen/runtime/v1/api.js';

// Type-level and runtime view of every CRI RPC, derived from ts-proto's generic definitions so
// that the client, the server helper and the fake cover new RPCs after a regeneration for free.

export type RuntimeMethods = typeof RuntimeServiceDefinition.methods;
export type ImageMethods = typeof ImageServiceDefinition.methods;
type AllMethods = RuntimeMethods & ImageMethods;

/** lowerCamelCase RPC key, e.g. "runPodSandbox". */
export type CriMethodKey = keyof AllMethods;
export type RequestOf<K extends CriMethodKey> = AllMethods[K] extends { requestType: MessageFns<infer R> }
  ? R
  : never;
export type ResponseOf<K extends CriMethodKey> = AllMethods[K] extends { responseType: MessageFns<infer R> }
  ? R
  : never;
export type UnaryKey = {
  [K in CriMethodKey]: AllMethods[K]['responseStream'] extends false ? K : never;
}[CriMethodKey];
export type StreamKey = Exclude<CriMethodKey, UnaryKey>;
export type RuntimeMethodKey = keyof RuntimeMethods;
export type ImageMethodKey = keyof ImageMethods;
export type { DeepPartial };

export interface CriMethodInfo {
  key: CriMethodKey;
  /** RPC name as in the proto, e.g. "RunPodSandbox". */
  name: string;
  /** e.g. "runtime.v1.RuntimeService". */
  service: string;
  /** gRPC path, e.g. "/runtime.v1.RuntimeService/RunPodSandbox". */
  path: string;
  responseStream: boolean;
  requestType: MessageFns<unknown>;
  responseType: MessageFns<unknown>;
}

function describe(def: typeof RuntimeServiceDefinition | typeof ImageServiceDefinition): CriMethodInfo[] {
  return Object.entries(def.methods).map(([key, m]) => ({
    key: key as CriMethodKey,
    name: m.name,
    service: def.fullName,
    path: `/${def.fullName}/${m.name}`,
    responseStream: m.responseStream,
    requestType: m.requestType as MessageFns<unknown>,
    responseType: m.responseType as MessageFns<unknown>,
  }));
}

export const runtimeMethods: readonly CriMethodInfo[] = describe(RuntimeServiceDefinition);
export const imageMethods: readonly CriMethodInfo[] = describe(ImageServiceDefinition);
export const criMethods: readonly CriMethodInfo[] = [...runtimeMethods, ...imageMethods];
