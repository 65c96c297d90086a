/** Parsing urlencoded form posts: single and repeated fields, and field names an object's prototype knows. */
import { describe, expect, it } from 'vitest';
import { formField, formFields, formOf } from '../../src/http/form-body.ts';

describe('formFields', () => {
  it('gives a field once as a string and repeated as an array', () => {
    expect({ ...formFields('a=1&b=2&b=3&c=%D1%8F') }).toEqual({ a: '1', b: ['2', '3'], c: 'я' });
  });

  it('keeps __proto__ and constructor as plain fields', () => {
    const fields = formFields('__proto__=x&constructor=y&toString=z');
    expect(Object.getPrototypeOf(fields)).toBeNull();
    expect(Object.keys(fields)).toEqual(['__proto__', 'constructor', 'toString']);
    expect(formField(fields, '__proto__')).toBe('x');
    expect(formField(formFields('a=1'), 'constructor')).toBeUndefined();
    expect(Object.getPrototypeOf(formOf(undefined))).toBeNull();
  });
});
