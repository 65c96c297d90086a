import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ConfigError } from './config.ts';
import { RedisUnreachableError } from './lib/errors.ts';
import { CommandError, EmbeddedRedisError, EXIT_USAGE, RedisUnavailableError, UsageError } from './runtime/errors.ts';
import { idOption } from './runtime/id-option.ts';
import { DIALECTS, type Dialect } from './simulator/dialect.ts';

/** What a command does with its parsed options; resolves to the process exit code. */
type Handler = (values: Values) => Promise<number>;
type Values = Record<string, string | boolean | undefined>;

interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  details: string;
  run: Handler;
}

/** Roles load lazily, so that `--help` and quick commands do not pay for the service's imports. */
const roles = () => import('./runtime/roles.ts');

const COMMANDS: Record<string, Command> = {
  demo: {
    summary: 'embedded Redis + bundled university simulator + API + worker; prints feed URLs',
    usage: 'timetable-sync demo [--port N] [--simulator-port N] [--seed S]',
    options: { port: { type: 'string' }, 'simulator-port': { type: 'string' }, seed: { type: 'string' } },
    details:
      'Runs everything on this machine with no configuration. Without REDIS_URL a private, password-protected\nredis-server is started under .data/ (installed from Debian when missing and running as root); one demo\nper folder. The service listens on --port (default PORT, 8080; 0 picks a free port), the simulator\non --simulator-port (default 4010; with --port 0, a free one too). Ctrl-C stops it all.',
    run: async (values) =>
      (await roles()).runDemo({
        port: optionalInt(values.port, '--port'),
        simulatorPort: optionalInt(values['simulator-port'], '--simulator-port'),
        seed: stringValue(values.seed),
      }),
  },
  start: {
    summary: 'the service: API and worker roles in one process',
    usage: 'timetable-sync start',
    options: {},
    details: 'Configuration comes from the environment (see .env.example); UNIVERSITY_API_URL is required.',
    run: async () => (await roles()).runServiceRole('start'),
  },
  api: {
    summary: 'the HTTP role only (feeds, subscriptions, admin)',
    usage: 'timetable-sync api',
    options: {},
    details: 'Any number of api processes may share one Redis.',
    run: async () => (await roles()).runServiceRole('api'),
  },
  worker: {
    summary: 'the background-job role only (refresh, push)',
    usage: 'timetable-sync worker',
    options: {},
    details: 'Any number of worker processes may share one Redis; UNIVERSITY_API_URL is required.',
    run: async () => (await roles()).runServiceRole('worker'),
  },
  simulator: {
    summary: 'the fake university API alone',
    usage: 'timetable-sync simulator [--port N] [--seed S] [--host H] [--dialect standard|legacy|legacy-unlabelled]',
    options: {
      port: { type: 'string' },
      seed: { type: 'string' },
      host: { type: 'string' },
      dialect: { type: 'string' },
    },
    details:
      'Serves the six university endpoints over deterministic generated data, plus /_sim control\nendpoints (move, cancel or add classes; inject faults). Default port 4010, seed 1. --dialect legacy\nanswers as older real deployments do (windows-1251, no success, numbers as strings, HH.MM times,\nDD.MM.YYYY dates, the employees search shape, null profile fields, one row per group, control\ncharacters); legacy-unlabelled also leaves the charset out of Content-Type.',
    run: async (values) =>
      (await roles()).runSimulator({
        port: optionalInt(values.port, '--port') ?? 4010,
        seed: stringValue(values.seed),
        host: stringValue(values.host),
        dialect: dialectOption(values.dialect),
      }),
  },
  render: {
    summary: 'one timetable as ICS on stdout',
    usage: 'timetable-sync render (--file F | --group ID | --employee ID | --me) [--from D] [--to D]',
    options: {
      file: { type: 'string' },
      group: { type: 'string' },
      employee: { type: 'string' },
      me: { type: 'boolean' },
      from: { type: 'string' },
      to: { type: 'string' },
    },
    details:
      '--me reads UNIVERSITY_CREDENTIAL. Invalid entries are left out and named on stderr (exit 0);\nan unreadable file, a failed fetch or an upstream error exits non-zero with the reason.',
    run: async (values) => {
      const { runRender } = await import('./runtime/render-command.ts');
      return runRender({
        file: stringValue(values.file),
        group: stringValue(values.group),
        employee: stringValue(values.employee),
        me: values.me === true,
        from: stringValue(values.from),
        to: stringValue(values.to),
      });
    },
  },
  resync: {
    summary: 'enqueue a resync and print the job ids, or wait for it with --wait',
    usage: 'timetable-sync resync (--all | --group ID | --employee ID | --subscription ID) [--wait]',
    options: {
      all: { type: 'boolean' },
      wait: { type: 'boolean' },
      group: { type: 'string' },
      employee: { type: 'string' },
      subscription: { type: 'string' },
    },
    details:
      'Uses REDIS_URL, or the embedded Redis recorded under .data/ by a running `start` or `demo`.\n--wait waits for the refresh jobs instead of printing their ids: progress on stderr (one redrawn\nline on a terminal, a line every 5 s or 10 % elsewhere), then a summary on stdout with failures grouped\nby reason. Exit 1 when any job failed; Ctrl-C stops waiting (exit 130) without cancelling the jobs.',
    run: async (values) => {
      const selectors = ['all', 'group', 'employee', 'subscription'].filter((key) => values[key] !== undefined);
      if (selectors.length !== 1)
        throw new UsageError('give exactly one of --all, --group, --employee, --subscription');
      for (const flag of ['group', 'employee'] as const)
        if (values[flag] !== undefined) idOption(`--${flag}`, values[flag]);
      const { runResync } = await import('./runtime/resync-command.ts');
      return runResync({
        all: values.all === true,
        group: stringValue(values.group),
        employee: stringValue(values.employee),
        subscription: stringValue(values.subscription),
        wait: values.wait === true,
      });
    },
  },
};

function stringValue(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function dialectOption(value: unknown): Dialect | undefined {
  if (value === undefined || DIALECTS.some((dialect) => dialect === value)) return value as Dialect | undefined;
  throw new UsageError(`--dialect must be one of ${DIALECTS.join(', ')} (got "${String(value)}")`);
}

function optionalInt(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(parsed) || parsed < 0 || parsed > 65535) {
    throw new UsageError(`${flag} must be a whole number from 0 to 65535 (got "${String(value)}")`);
  }
  return parsed;
}

/** The top-level help text. */
export function generalHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`);
  return `Usage: timetable-sync <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun \`timetable-sync <command> --help\` for a command's options.\n`;
}

function commandHelp(command: Command): string {
  return `Usage: ${command.usage}\n\n${command.summary}.\n\n${command.details}\n`;
}

/** Runs the command line; resolves to the exit code. Never throws. */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' && rest[0] !== undefined ? COMMANDS[rest[0]] : undefined;
    if (name === undefined) {
      process.stderr.write(generalHelp());
      return EXIT_USAGE;
    }
    process.stdout.write(topic && rest[0] ? commandHelp(topic) : generalHelp());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`timetable-sync: unknown command "${name}"\n\n${generalHelp()}`);
    return EXIT_USAGE;
  }
  try {
    const options = { ...command.options, help: { type: 'boolean', short: 'h' } } satisfies Command['options'];
    const { values } = parseArgs({
      args: attachDashValues(rest, options),
      options,
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      process.stdout.write(commandHelp(command));
      return 0;
    }
    return await command.run(values);
  } catch (error) {
    return reportFailure(name, command, error);
  }
}

/**
 * `parseArgs` refuses `--subscription -Xy…` as ambiguous, but a base64url subscription id starts with `-` one
 * time in 64. A value that follows a string option and is not itself one of the command's options is that
 * option's value: it is attached as `--subscription=-Xy…`, the form `parseArgs` accepts.
 */
export function attachDashValues(args: readonly string[], options: Command['options']): string[] {
  const known = new Set<string>();
  const takesValue = new Set<string>();
  for (const [name, option] of Object.entries(options)) {
    for (const flag of option.short ? [`--${name}`, `-${option.short}`] : [`--${name}`]) {
      known.add(flag);
      if (option.type === 'string') takesValue.add(flag);
    }
  }
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = args[i + 1];
    const isOption = (token: string) => known.has(token.split('=')[0] as string) || token === '--';
    if (takesValue.has(arg) && arg.startsWith('--') && next?.startsWith('-') && next !== '-' && !isOption(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

function reportFailure(name: string, command: Command, error: unknown): number {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
    process.stderr.write(`timetable-sync ${name}: ${(error as Error).message}\nUsage: ${command.usage}\n`);
    return EXIT_USAGE;
  }
  // Failures we explain ourselves: the message says what to do, a stack trace would only hide it.
  const oneLine = [ConfigError, RedisUnavailableError, RedisUnreachableError, EmbeddedRedisError, CommandError];
  if (oneLine.some((kind) => error instanceof kind)) {
    process.stderr.write(`timetable-sync ${name}: ${(error as Error).message}\n`);
    return error instanceof CommandError ? error.exitCode : 1;
  }
  process.stderr.write(
    `timetable-sync ${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 1;
}
