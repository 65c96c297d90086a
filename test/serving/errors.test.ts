/** Feed serving's failures answer through the HTTP error catalog with the status, code, headers and words they carry. */
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import {
  CredentialNeededError,
  FeedUnavailableError,
  UnknownTimetableError,
  VariantRefusedError,
} from '../../src/serving/errors.ts';

const words = (en: string) => ({ en, ru: `по-русски: ${en}` });

describe('feed serving errors in the error catalog', () => {
  it('answer 503 with Retry-After in seconds while a feed is not ready', () => {
    const error = new FeedUnavailableError('TIMETABLE_NOT_READY', words('this timetable is being prepared'), 10);
    const answer = toHttpError(error);
    expect(answer).toMatchObject({ statusCode: 503, message: 'this timetable is being prepared' });
    expect(answer?.code).toBe('TIMETABLE_NOT_READY');
    expect(answer?.words.ru).toBe('по-русски: this timetable is being prepared');
    expect(answer?.headers).toEqual({ 'Retry-After': '10' });
  });

  it('answer 404, 409 and 400 with their own code and words and no extra header', () => {
    const cases: [Error, number, string][] = [
      [new UnknownTimetableError(words('group 4040 is not known to the university')), 404, 'SOURCE_NOT_FOUND'],
      [new CredentialNeededError(words('this subscription needs a new credential')), 409, 'CREDENTIAL_NEEDED'],
      [
        new VariantRefusedError('INVALID_QUERY', words('query parameter subgroup: no subgroup 7')),
        400,
        'INVALID_QUERY',
      ],
      [
        new VariantRefusedError('FEED_TOO_LARGE', words('these options make the feed too large')),
        400,
        'FEED_TOO_LARGE',
      ],
    ];
    for (const [error, status, code] of cases) {
      const answer = toHttpError(error);
      expect(answer, error.name).toMatchObject({ statusCode: status, message: error.message, code });
      expect(answer?.headers, error.name).toEqual({});
    }
  });
});
