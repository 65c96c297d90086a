import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingOptional, platformOf } from '../scripts/complete-lock.ts';

describe('package-lock.json', () => {
  it('has an entry for every optional platform package (else `npm ci` refuses it: run scripts/complete-lock.ts)', () => {
    const lock = JSON.parse(readFileSync(join(import.meta.dirname, '../package-lock.json'), 'utf8'));
    expect(missingOptional(lock.packages)).toEqual([]);
  });
});

describe('platformOf', () => {
  it('reads the platform of a binary package from its name', () => {
    expect(platformOf('@biomejs/cli-darwin-arm64')).toEqual({ os: ['darwin'], cpu: ['arm64'] });
    expect(platformOf('@biomejs/cli-linux-x64-musl')).toEqual({ os: ['linux'], cpu: ['x64'], libc: ['musl'] });
    expect(platformOf('@swc/core-linux-arm-gnueabihf')).toEqual({ os: ['linux'], cpu: ['arm'], libc: ['glibc'] });
    expect(platformOf('@swc/core-win32-ia32-msvc')).toEqual({ os: ['win32'], cpu: ['ia32'] });
    expect(platformOf('@swc/counter')).toBeUndefined();
  });
});
