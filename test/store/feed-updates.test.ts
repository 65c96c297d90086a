import { describe, expect, it } from 'vitest';
import { type FeedUpdate, feedUpdateMessage, parseFeedUpdate } from '../../src/store/feed-updates.ts';

describe('feed-updates messages', () => {
  it('reads back every kind of update it writes', () => {
    for (const update of [
      { kind: 'feed', source: 'group:4242' },
      { kind: 'tokens', source: 'personal:abc' },
      { kind: 'gone', source: 'personal:abc' },
    ] as FeedUpdate[])
      expect(parseFeedUpdate(feedUpdateMessage(update))).toEqual(update);
    expect(feedUpdateMessage({ kind: 'feed', source: 'group:4242' })).toBe('group:4242');
    expect(feedUpdateMessage({ kind: 'gone', source: 'personal:abc' })).toBe('gone personal:abc');
  });

  it('takes a message without a space for a whole source key, even one starting with a word', () => {
    // Such a key ends one character after the word: slicing up to a missing space used to drop that character.
    expect(parseFeedUpdate('tokensX')).toEqual({ kind: 'feed', source: 'tokensX' });
    expect(parseFeedUpdate('gone1')).toEqual({ kind: 'feed', source: 'gone1' });
    expect(parseFeedUpdate('gone')).toEqual({ kind: 'feed', source: 'gone' });
  });

  it('takes an unknown word for part of the source key, as an older release would', () => {
    expect(parseFeedUpdate('moved personal:abc')).toEqual({ kind: 'feed', source: 'moved personal:abc' });
  });
});
