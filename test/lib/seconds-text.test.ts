import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { SourceNotReadyError } from '../../src/jobs/errors.ts';
import { secondsText } from '../../src/lib/retry-after.ts';
import { UpstreamBudgetError } from '../../src/upstream/errors.ts';

describe('secondsText', () => {
  it.each([
    [0, '1 second'],
    [1, '1 second'],
    [1_000, '1 second'],
    [1_001, '2 seconds'],
    [180_000, '180 seconds'],
  ])('says %d ms as "%s"', (ms, text) => {
    expect(secondsText(ms)).toBe(text);
  });

  it('words the retry of errors that answer within a second in the singular', () => {
    expect(toHttpError(new UpstreamBudgetError('me', 800))?.message).toBe(
      'too many requests to the university right now; try again in 1 second',
    );
    expect(new SourceNotReadyError('group:7', 1_000).message).toMatch(/try again in 1 second$/);
  });
});
