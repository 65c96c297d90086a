/**
 * HTML form posts (`application/x-www-form-urlencoded`) as request bodies: a field given once is a string,
 * one given several times (checkboxes) an array. Registered per scope, once: the page routes that take forms
 * ask for it, and the JSON API elsewhere keeps refusing form bodies (415).
 */
import type { FastifyInstance } from 'fastify';

const FORM = 'application/x-www-form-urlencoded';

/** A parsed form: each field's value, or its values when repeated. */
export type FormFields = Record<string, string | string[]>;

/** Lets the routes of `scope` (and its children) read form posts as {@link FormFields}, of at most `bodyLimit` bytes. */
export function acceptForms(scope: FastifyInstance, bodyLimit?: number): void {
  if (scope.hasContentTypeParser(FORM)) return;
  scope.addContentTypeParser(
    FORM,
    { parseAs: 'string', ...(bodyLimit === undefined ? {} : { bodyLimit }) },
    (_request, body, done) => {
      done(null, formFields(String(body)));
    },
  );
}

/** Parses a urlencoded body (into an object without prototype: a field named `__proto__` is a plain field). */
export function formFields(body: string): FormFields {
  const fields: FormFields = Object.create(null);
  for (const [name, value] of new URLSearchParams(body)) {
    const before = fields[name];
    if (before === undefined) fields[name] = value;
    else fields[name] = Array.isArray(before) ? [...before, value] : [before, value];
  }
  return fields;
}

/** The body of a form post (an empty form when there was none, or it was not a form). */
export function formOf(body: unknown): FormFields {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as FormFields) : Object.create(null);
}

/** A field of a posted form given once; undefined when the body is not a form, lacks it, or repeats it. */
export function formField(body: unknown, name: string): string | undefined {
  const value = formOf(body)[name];
  return typeof value === 'string' ? value : undefined;
}
