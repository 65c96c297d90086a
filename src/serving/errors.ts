/**
 * Typed failures of feed serving, worded in both languages; the HTTP error catalog (http/errors.ts) gives each
 * its status, code and headers.
 */
import type { Words } from '../lib/words.ts';

/** A failure worded for people; `message` is its English text, for logs. */
abstract class ServingError extends Error {
  readonly words: Words;

  constructor(words: Words) {
    super(words.en);
    this.words = words;
  }
}

/**
 * A feed that cannot be answered yet but soon can: its timetable is being fetched or prepared (`code`
 * TIMETABLE_NOT_READY), or too many fetches (UPSTREAM_BUSY) or renders (VARIANTS_BUSY) are under way. The
 * client is asked to come back in `retryAfterSeconds` (503).
 */
export class FeedUnavailableError extends ServingError {
  override name = 'FeedUnavailableError';
  readonly code: 'TIMETABLE_NOT_READY' | 'UPSTREAM_BUSY' | 'VARIANTS_BUSY';
  readonly retryAfterSeconds: number;

  constructor(code: FeedUnavailableError['code'], words: Words, retryAfterSeconds: number) {
    super(words);
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The university does not know the timetable a feed was asked for; the words name it and quote the university (404). */
export class UnknownTimetableError extends ServingError {
  override name = 'UnknownTimetableError';
}

/** A personal feed that cannot be fetched until its subscription gets a new university credential (409). */
export class CredentialNeededError extends ServingError {
  override name = 'CredentialNeededError';
}

/**
 * Subscriber options a timetable cannot honour (a subgroup or kind of class it never had: INVALID_QUERY), or
 * that would make a variant larger than its cap (FEED_TOO_LARGE); the words say which (400).
 */
export class VariantRefusedError extends ServingError {
  override name = 'VariantRefusedError';
  readonly code: 'INVALID_QUERY' | 'FEED_TOO_LARGE';

  constructor(code: VariantRefusedError['code'], words: Words) {
    super(words);
    this.code = code;
  }
}

/** The subscriber options, by the name of their query parameter and form field. */
export type OptionField = 'subgroup' | 'exclude' | 'alarm' | 'title';

/**
 * One subscriber option refused (INVALID_QUERY, 400): a malformed value, or one the timetable never had.
 * `words` name the query parameter, as the answer to a feed URL should; `fieldWords` say what is wrong with
 * the value and what to do, as a form shows them beside its `field`.
 */
export class OptionRefusedError extends VariantRefusedError {
  override name = 'OptionRefusedError';
  readonly field: OptionField;
  readonly fieldWords: Words;

  constructor(field: OptionField, words: Words, fieldWords: Words) {
    super('INVALID_QUERY', words);
    this.field = field;
    this.fieldWords = fieldWords;
  }
}
