/** Feed serving's failures answer through the HTTP error catalog with the status, headers and words they carry. */
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import {
  CredentialNeededError,
  FeedUnavailableError,
  UnknownTimetableError,
  VariantRefusedError,
} from '../../src/serving/errors.ts';

describe('feed serving errors in the error catalog', () => {
  it('answer 503 with Retry-After in seconds while a feed is not ready', () => {
    const answer = toHttpError(new FeedUnavailableError('this timetable is being prepared', 10));
    expect(answer).toMatchObject({ statusCode: 503, message: 'this timetable is being prepared', code: undefined });
    expect(answer?.headers).toEqual({ 'Retry-After': '10' });
  });

  it('answer 404, 409 and 400 with their own words and no extra header', () => {
    const cases: [Error, number][] = [
      [new UnknownTimetableError('group 4040 is not known to the university'), 404],
      [new CredentialNeededError('this subscription needs a new university credential'), 409],
      [new VariantRefusedError('query parameter subgroup: this timetable has no subgroup 7'), 400],
    ];
    for (const [error, status] of cases) {
      const answer = toHttpError(error);
      expect(answer, error.name).toMatchObject({ statusCode: status, message: error.message, code: undefined });
      expect(answer?.headers, error.name).toEqual({});
    }
  });
});
