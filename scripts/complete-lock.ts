/**
 * Completes package-lock.json with the platform packages the npm registry mirror of our build machines does not
 * serve. Biome and swc ship one binary package per platform as optional dependencies; the mirror serves only
 * the Linux ones, so `npm install` leaves the others out of the lock, and `npm ci` then refuses the lock as out
 * of sync ("Missing: @biomejs/cli-darwin-arm64@ from lock file"). This adds an entry for each missing package,
 * with the platform read from its name: npm skips it on every other platform, and on its own platform fetches
 * it from the public registry. Run it after `npm install` adds or updates such a package:
 *
 *     node scripts/complete-lock.ts
 *
 * `test/lockfile.test.ts` fails while an entry is missing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A package entry of the lock, as much of it as this script reads or writes. */
interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
}

const OSES = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'sunos', 'win32'];
const CPUS = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64'];

/** The platform a binary package is for, from its name (`@swc/core-linux-x64-musl`); undefined if unknown. */
export function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> | undefined {
  const parts = name.split('/').at(-1)?.split('-') ?? [];
  const os = OSES.find((candidate) => parts.includes(candidate));
  const cpu = CPUS.find((candidate) => parts.includes(candidate));
  if (os === undefined || cpu === undefined) return undefined;
  const libc = os !== 'linux' ? undefined : parts.includes('musl') ? 'musl' : 'glibc';
  return { os: [os], cpu: [cpu], ...(libc === undefined ? {} : { libc: [libc] }) };
}

/** The optional dependencies that the lock names but has no entry for. */
export function missingOptional(
  packages: Record<string, LockEntry>,
): { name: string; version: string; dev: boolean }[] {
  const missing = new Map<string, { name: string; version: string; dev: boolean }>();
  for (const entry of Object.values(packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      if (packages[`node_modules/${name}`] === undefined) missing.set(name, { name, version, dev: entry.dev === true });
    }
  }
  return [...missing.values()];
}

function complete(file: string): void {
  const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> };
  const added: string[] = [];
  for (const { name, version, dev } of missingOptional(lock.packages)) {
    const platform = platformOf(name);
    if (platform === undefined)
      throw new Error(`cannot tell the platform of ${name} from its name; add its entry by hand`);
    lock.packages[`node_modules/${name}`] = { version, ...(dev ? { dev } : {}), optional: true, ...platform };
    added.push(`${name}@${version}`);
  }
  const byPath = Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1));
  lock.packages = Object.fromEntries(byPath);
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  process.stdout.write(added.length === 0 ? 'package-lock.json is complete\n' : `added ${added.join(', ')}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) complete('package-lock.json');
