import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

describe('bundled Node runtime', () => {
  it("runs the test suite on Node 24, not the machine's Node 20", () => {
    expect(Number(process.versions.node.split('.')[0])).toBe(24);
  });

  it('pins the node package exactly and ships its binary in node_modules/.bin', () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    expect(pkg.devDependencies.node).toMatch(/^24\.\d+\.\d+$/);
    const version = execFileSync(resolve(root, 'node_modules/.bin/node'), ['--version'], { encoding: 'utf8' }).trim();
    expect(version).toBe(`v${pkg.devDependencies.node}`);
  });

  it('resolves `node` on the npm script PATH to the bundled runtime', () => {
    const version = execFileSync('node', ['--version'], { encoding: 'utf8' }).trim();
    expect(version.startsWith('v24.')).toBe(true);
  });
});
