// Public surface of @kh/cri-api: the generated CRI v1 types and service definitions.
export * from './gen/runtime/v1/api.js';
