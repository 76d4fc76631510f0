import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  CanceledError,
  CriError,
  criErrorFromCode,
  DeadlineExceededError,
  InternalError,
  isNotFound,
  isUnimplemented,
  NotFoundError,
  toCriError,
  UnimplementedError,
  UnknownCriError,
} from '../src/api/errors.js';

describe('CriError', () => {
  it('maps every gRPC error code to its subclass', () => {
    const cases: [status, new (...a: never[]) => CriError][] = [
      [status.NOT_FOUND, NotFoundError],
      [status.UNIMPLEMENTED, UnimplementedError],
      [status.DEADLINE_EXCEEDED, DeadlineExceededError],
      [status.CANCELLED, CanceledError],
      [status.INTERNAL, InternalError],
      [status.UNKNOWN, UnknownCriError],
    ];
    for (const [code, Cls] of cases) {
      const err = criErrorFromCode(code, 'boom', { method: 'Version' });
      expect(err).toBeInstanceOf(Cls);
      expect(err).toBeInstanceOf(CriError);
      expect(err.code).toBe(code);
    }
    for (let code = 1; code <= 16; code++) {
      const err = criErrorFromCode(code, 'x');
      expect(err.constructor).not.toBe(CriError);
      expect(err.name).toBe(err.constructor.name);
    }
  });

  it('keeps details, method and a readable message', () => {
    const err = new NotFoundError('container "abc" not found', { method: 'ContainerStatus' });
    expect(err.details).toBe('container "abc" not found');
    expect(err.method).toBe('ContainerStatus');
    expect(err.message).toBe('ContainerStatus: container "abc" not found');
    expect(err.codeName).toBe('NOT_FOUND');
    expect(isNotFound(err)).toBe(true);
    expect(isUnimplemented(err)).toBe(false);
    expect(isNotFound(new Error('not found'))).toBe(false);
  });

  it('converts grpc ServiceErrors and plain errors', () => {
    const svc = Object.assign(new Error('5 NOT_FOUND: gone'), { code: 5, details: 'gone' });
    const e = toCriError(svc, 'RemoveImage');
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e.details).toBe('gone');
    expect(e.cause).toBe(svc);
    const plain = toCriError(new Error('weird'), 'Version');
    expect(plain).toBeInstanceOf(UnknownCriError);
    expect(plain.details).toBe('weird');
    const kept = new NotFoundError('x', { method: 'A' });
    expect(toCriError(kept, 'B')).toBe(kept);
    expect(toCriError(new NotFoundError('x'), 'B').method).toBe('B');
  });
});
