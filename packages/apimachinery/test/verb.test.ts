import { describe, expect, it } from 'vitest';
import { verbForMethod } from '../src/index.js';

describe('verbForMethod', () => {
  it('maps methods to the verbs authorization sees', () => {
    expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].map(verbForMethod)).toEqual([
      'get',
      'get',
      'create',
      'update',
      'patch',
      'delete',
    ]);
  });
  it('keeps an unknown method as its lower-cased name and treats none as GET', () => {
    expect(verbForMethod('OPTIONS')).toBe('options');
    expect(verbForMethod(undefined)).toBe('get');
  });
});
