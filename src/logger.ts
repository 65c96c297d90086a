import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

/** Log levels accepted by `LOG_LEVEL`, most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Paths whose values never reach a log line. Credentials and tokens travel under these names everywhere in
 * the code base; pino's `*` matches exactly one level, so the common nestings are listed explicitly.
 */
export const REDACT_PATHS: readonly string[] = [
  'credential',
  'token',
  'accessToken',
  'refreshToken',
  'password',
  'secret',
  'authorization',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.credential',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  '*.password',
  '*.secret',
  '*.authorization',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.Authorization',
  'universityCredential',
  '*.universityCredential',
  '*.adminToken',
  '*.secretKey',
  '*.googleClientSecret',
  '*.clientSecret',
  '*.headers["x-api-key"]',
  '*.SECRET_KEY',
  '*.UNIVERSITY_CREDENTIAL',
  '*.ADMIN_TOKEN',
  '*.GOOGLE_CLIENT_SECRET',
];

/** Options for {@link createLogger}. */
export interface LoggerSettings {
  level: LogLevel;
  /** Pretty, coloured lines for people; default: only when stdout is a terminal. */
  pretty?: boolean;
  /** Where lines go; default stdout. Tests pass a memory stream to inspect what was logged. */
  destination?: DestinationStream;
  /** Bound to every line, for example `{ role: 'worker' }`. */
  base?: Record<string, unknown>;
}

/**
 * Builds the process's one root logger. Components receive it (or a child bound to their context) as a
 * parameter; nothing imports a logger singleton.
 */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    level: settings.level,
    base: { pid: process.pid, ...settings.base },
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const wantPretty = settings.pretty ?? (settings.destination === undefined && process.stdout.isTTY === true);
  if (wantPretty) {
    const destination = settings.destination ?? 1;
    const colorize = settings.destination === undefined;
    // One line per event (a published feed once took 14): who and what first, the other fields as inline JSON.
    // An error's stack only at debug and trace; the JSON output always carries it.
    const verbose = settings.level === 'debug' || settings.level === 'trace';
    const ignore = ['pid', 'hostname', ...(verbose ? [] : ['err'])].join(',');
    return pino(
      options,
      pretty({
        colorize,
        destination,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore,
        singleLine: true,
        messageFormat: (log) => headlineFirst(log, !verbose),
        sync: true,
      }),
    );
  }
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** Bound fields that lead a pretty line, in this order, instead of repeating in its JSON tail. */
const PRETTY_HEADLINE = ['role', 'component', 'source'] as const;

/**
 * The message of a pretty line, taking the fields it shows out of the line's JSON tail: pino-pretty formats
 * the message before the tail, from the same object. A headline field that is not a non-empty string (a
 * `source` object, a number) is not in the message, so it stays in the tail instead of vanishing, as it did
 * when the headline keys were in pino-pretty's `ignore` list.
 */
function headlineFirst(log: Record<string, unknown>, withError: boolean): string {
  const message = prettyMessage(log, withError);
  for (const key of PRETTY_HEADLINE) if (isHeadline(log[key])) delete log[key];
  return message;
}

function isHeadline(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/**
 * The message part of a pretty line: `worker group:1 feed published`, and with `withError` the logged
 * error's own message after it (`… failed: Error: boom`), since its stack is left out of the line.
 */
export function prettyMessage(log: Record<string, unknown>, withError: boolean): string {
  const head = PRETTY_HEADLINE.map((key) => log[key]).filter(isHeadline);
  const parts = [...head, typeof log.msg === 'string' ? log.msg : ''].filter((part) => part !== '');
  const err = log.err as { type?: unknown; message?: unknown } | undefined;
  const error =
    withError && err !== undefined && err !== null && typeof err === 'object'
      ? `: ${typeof err.type === 'string' ? `${err.type}: ` : ''}${String(err.message ?? '').replace(/\s*\n\s*/g, ' ')}`
      : '';
  return `${parts.join(' ')}${error}`;
}

/** A logger that writes nothing: for tests and library callers that do not care. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
