import { describe, expect, it } from 'vitest';
import { aggregateMessage, ErrorList, errorBody, formatFieldError } from '../src/index.js';

describe('ErrorList', () => {
  it('formats each type as field.Error does', () => {
    const l = new ErrorList();
    l.invalid('spec.port', 70000, 'must be between 1 and 65535');
    l.required('metadata.name', 'name or generateName is required');
    l.required('spec.containers');
    l.notSupported('spec.restartPolicy', 'Sometimes', ['Always', 'OnFailure', 'Never']);
    l.duplicate('spec.containers[1].name', 'app');
    l.notFound('spec.volumes[0]', 'data');
    l.forbidden('spec.nodeName', 'may not be changed');
    l.unknown('spec.bogus');
    l.invalid('metadata.labels', 'a b', '');
    expect(l.errors.map(formatFieldError)).toEqual([
      'spec.port: Invalid value: 70000: must be between 1 and 65535',
      'metadata.name: Required value: name or generateName is required',
      'spec.containers: Required value',
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      'spec.containers[1].name: Duplicate value: "app"',
      'spec.volumes[0]: Not found: "data"',
      'spec.nodeName: Forbidden: may not be changed',
      'spec.bogus: unknown field',
      'metadata.labels: Invalid value: "a b"',
    ]);
    expect(l.errors.map((e) => e.type)).toEqual([
      'FieldValueInvalid',
      'FieldValueRequired',
      'FieldValueRequired',
      'FieldValueNotSupported',
      'FieldValueDuplicate',
      'FieldValueNotFound',
      'FieldValueForbidden',
      'FieldValueUnknown',
      'FieldValueInvalid',
    ]);
  });

  it('errorBody is the message without the field, as a Status cause carries it', () => {
    expect(errorBody({ type: 'FieldValueInvalid', field: 'x', value: { a: 1 }, detail: 'bad' })).toBe(
      'Invalid value: {"a":1}: bad',
    );
  });

  it('starts empty', () => {
    const l = new ErrorList();
    expect(l.empty).toBe(true);
    l.required('x');
    expect(l.empty).toBe(false);
  });
});

describe('aggregateMessage', () => {
  it('prints one error bare and several in brackets', () => {
    const l = new ErrorList();
    l.required('a');
    expect(aggregateMessage(l.errors)).toBe('a: Required value');
    l.invalid('b', 1, 'too small');
    expect(aggregateMessage(l.errors)).toBe('[a: Required value, b: Invalid value: 1: too small]');
  });
});
