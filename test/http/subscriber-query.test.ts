/** The option fields of a page query or form post, before they are parsed as a feed URL's options. */
import { describe, expect, it } from 'vitest';
import { filledOptionFields, parseSubscriberQuery } from '../../src/http/subscriber-query.ts';

describe('filledOptionFields', () => {
  it('drops empty fields and empty values of repeated ones, and fields that are no option', () => {
    const fields = filledOptionFields({
      subgroup: '',
      alarm: ' ',
      title: '{subject}',
      exclude: ['лекция', '', 'семинар'],
      lang: 'en',
      done: undefined,
    });
    expect(fields).toEqual({ title: '{subject}', exclude: ['лекция', 'семинар'] });
    expect(filledOptionFields({ exclude: ['', 'лекция'], subgroup: ['2'] })).toEqual({
      exclude: 'лекция',
      subgroup: '2',
    });
    expect(parseSubscriberQuery(filledOptionFields({ subgroup: '', alarm: '15' })).options).toEqual({
      alarmMinutes: 15,
    });
  });
});
