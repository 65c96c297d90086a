/** The redirect after a manage page's options save, and what the page reads back from it. */
import { describe, expect, it } from 'vitest';
import { optionsSavedOutcome, optionsSavedPath } from '../../src/http/push-options-form.ts';

const DEFAULT_TITLE = '{subject} — {room}';

/** The query of a path as Fastify parses it for a route (a repeated name an array). */
function queryOf(path: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(path.split('?')[1] ?? '')) {
    const had = query[name];
    query[name] = had === undefined ? value : [had, value].flat();
  }
  return query;
}

describe('the page after an options save', () => {
  it('carries what the calendar followed before, read back as it was', () => {
    const before = { subgroup: 2, excludeKinds: ['лекция', 'семинар'], alarmMinutes: 0, titleTemplate: '{subject}' };
    const path = optionsSavedPath('/caldav/targets/abc', before, DEFAULT_TITLE);
    expect(path).not.toContain('#');
    expect(path.startsWith('/caldav/targets/abc?done=options&was=')).toBe(true);
    expect(optionsSavedOutcome(queryOf(path))).toEqual({ before });
    // No options of its own, or only the default title: none.
    for (const none of [undefined, {}, { titleTemplate: DEFAULT_TITLE }]) {
      const plain = optionsSavedPath('/google/targets/abc', none, DEFAULT_TITLE);
      expect(plain).toBe('/google/targets/abc?done=options&was=');
      expect(optionsSavedOutcome(queryOf(plain))).toEqual({ before: {} });
    }
  });

  it('names no save without the word and its `was`; a value that does not read is no option', () => {
    expect(optionsSavedOutcome({})).toBeUndefined();
    expect(optionsSavedOutcome(undefined)).toBeUndefined();
    expect(optionsSavedOutcome({ done: 'options' })).toBeUndefined();
    expect(optionsSavedOutcome({ done: 'rotated', was: '' })).toBeUndefined();
    expect(optionsSavedOutcome({ done: ['options', 'options'], was: '' })).toBeUndefined();
    expect(optionsSavedOutcome({ done: 'options', was: 'subgroup=abc&alarm=15' })).toEqual({
      before: { alarmMinutes: 15 },
    });
  });
});
