import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NODE_CACHE_ENV } from '../../testkit/processes.ts';

/** Default working folder of CLI runs: empty, so that a developer's own `.env` or `.data/` never leaks in. */
const EMPTY_FOLDER = mkdtempSync(join(tmpdir(), 'tts-cli-cwd-'));
process.once('exit', () => rmSync(EMPTY_FOLDER, { recursive: true, force: true }));

/** Absolute path of the command-line entry point. */
export const CLI = resolve(import.meta.dirname, '../../bin/timetable-sync.js');

/** The outcome of one finished CLI run. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `timetable-sync ARGS` to completion on this Node, with only the given environment (plus PATH). */
export function runCli(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = startCli(args, options);
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/** Starts `timetable-sync ARGS` and returns the running child (stdout and stderr piped). */
export function startCli(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? EMPTY_FOLDER,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...NODE_CACHE_ENV, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with everything a child wrote to stdout once `pattern` appears in it (rejects on exit first). */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  return new Promise((done, fail) => {
    let seen = '';
    let errors = '';
    const timer = setTimeout(
      () => fail(new Error(`timed out waiting for ${pattern}; stdout: ${seen}; stderr: ${errors}`)),
      timeoutMs,
    );
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        done(seen);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited with ${code} before ${pattern}; stdout: ${seen}; stderr: ${errors}`));
    });
  });
}

/** Resolves with the exit code once the child has exited. */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((done) => child.once('exit', (code) => done(code)));
}
