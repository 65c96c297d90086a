import { describe, expect, it } from 'vitest';
import { attachDashValues } from '../src/cli.ts';

const options = {
  all: { type: 'boolean' },
  subscription: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

describe('attachDashValues', () => {
  it('attaches a value that starts with a dash to the string option before it', () => {
    // One base64url subscription id in 64 starts with "-".
    expect(attachDashValues(['--subscription', '-4hTz0aQ1LW9cV2Xb3yZ0Ag'], options)).toEqual([
      '--subscription=-4hTz0aQ1LW9cV2Xb3yZ0Ag',
    ]);
  });

  it('leaves ordinary values, boolean options and option names alone', () => {
    expect(attachDashValues(['--subscription', 'abc'], options)).toEqual(['--subscription', 'abc']);
    expect(attachDashValues(['--all', '-x'], options)).toEqual(['--all', '-x']);
    // A missing value stays a usage error rather than swallowing the next option.
    expect(attachDashValues(['--subscription', '--all'], options)).toEqual(['--subscription', '--all']);
    expect(attachDashValues(['--subscription', '-h'], options)).toEqual(['--subscription', '-h']);
    expect(attachDashValues(['--subscription', '--all=1'], options)).toEqual(['--subscription', '--all=1']);
  });
});
