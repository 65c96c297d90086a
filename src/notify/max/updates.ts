/**
 * The updates the MAX bot reads, as MAX sends them to `GET /updates` and to a webhook (dev.max.ru's OpenAPI
 * schema, `BotStartedUpdate` and its siblings, and the official Go client's `stabs/update.*.json`). Only what the
 * bot uses is kept; any other field is dropped, and an update of another type, or one that does not read as its
 * type, is not handled (a newer API may send more).
 *
 * Ids (`chat_id`, `user_id`) and the queue's `marker` are 64-bit integers: read as strings from the JSON text
 * itself ({@link readMaxJson}), so that one beyond 2^53 keeps its every digit.
 */
import { z } from 'zod';

/** The update types the bot asks for: a start (with a link's payload), a stop, a message, a removed dialog, a press. */
export const UPDATE_TYPES = [
  'bot_started',
  'bot_stopped',
  'message_created',
  'dialog_removed',
  'message_callback',
] as const;

/** JSON fields read as the digits MAX sent (64-bit integers). */
const ID_FIELDS = new Set(['chat_id', 'user_id', 'marker']);

/** JSON text to a value, with {@link ID_FIELDS} as strings of their digits. */
export function readMaxJson(text: string): unknown {
  // Node's JSON.parse passes the source text of a primitive to the reviver (TC39 "JSON.parse source text access").
  const reviver = (key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && ID_FIELDS.has(key) && context?.source !== undefined ? context.source : value;
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
}

/** An id: its digits, or a number (a value parsed without {@link readMaxJson}) when it is a safe integer. */
const id = z.union([
  z.string().regex(/^-?\d{1,20}$/),
  z
    .number()
    .refine((value) => Number.isSafeInteger(value))
    .transform(String),
]);

const user = z.object({
  user_id: id,
  name: z.string().nullish(),
  is_bot: z.boolean().nullish(),
});

const message = z.object({
  sender: user.nullish(),
  recipient: z.object({ chat_id: id.nullish(), chat_type: z.string(), user_id: id.nullish() }),
  timestamp: z.number(),
  body: z.object({ mid: z.string().min(1), text: z.string().nullish() }),
});

const botStarted = z.object({
  update_type: z.literal('bot_started'),
  timestamp: z.number(),
  chat_id: id,
  user,
  /** What followed `?start=` in the link the person opened (up to 128 characters). */
  payload: z.string().nullish(),
});

const botStopped = z.object({
  update_type: z.literal('bot_stopped'),
  timestamp: z.number(),
  chat_id: id,
  user,
});

const dialogRemoved = z.object({
  update_type: z.literal('dialog_removed'),
  timestamp: z.number(),
  chat_id: id,
  user,
});

const messageCreated = z.object({
  update_type: z.literal('message_created'),
  timestamp: z.number(),
  message,
});

const messageCallback = z.object({
  update_type: z.literal('message_callback'),
  timestamp: z.number(),
  callback: z.object({
    callback_id: z.string().min(1),
    payload: z.string().nullish(),
    user,
    timestamp: z.number(),
  }),
  /** The bot's message whose button was pressed; in a dialog its `recipient.chat_id` may be missing. */
  message: message.nullish(),
});

const update = z.discriminatedUnion('update_type', [
  botStarted,
  botStopped,
  dialogRemoved,
  messageCreated,
  messageCallback,
]);

/** One update the bot handles. */
export type MaxUpdate = z.infer<typeof update>;
/** A message as an update carries it. */
export type MaxMessage = z.infer<typeof message>;

/** An update the bot handles, or undefined for any other (another type, or not readable as its type). */
export function parseUpdate(value: unknown): MaxUpdate | undefined {
  const parsed = update.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** `GET /updates`'s answer: the page of updates (each still unparsed) and the marker of the next one. */
const updateList = z.object({
  updates: z.array(z.unknown()),
  marker: id.nullish(),
});

/** Reads `GET /updates`'s answer, or throws a ZodError. */
export function parseUpdateList(value: unknown): { updates: unknown[]; marker: string | undefined } {
  const { updates, marker } = updateList.parse(value);
  return { updates, marker: marker ?? undefined };
}

/** `GET /me`: the bot itself. Its `username` makes `https://max.ru/<username>` links. */
export const botInfoSchema = z.object({
  user_id: id,
  username: z.string().nullish(),
  name: z.string().nullish(),
  first_name: z.string().nullish(),
});

/** The bot as `GET /me` describes it. */
export type MaxBotInfo = z.infer<typeof botInfoSchema>;

/**
 * A key naming one update, for dropping a copy (a poller that took over, a webhook retried): updates have no id,
 * so a message's or a press's own id (`mid`, `callback_id`), else its type, dialog and time. Only characters a
 * BullMQ job id and a Redis key take well.
 */
export function updateKey(value: MaxUpdate): string {
  let key: string;
  switch (value.update_type) {
    case 'message_created':
      key = `m-${value.message.body.mid}`;
      break;
    case 'message_callback':
      key = `c-${value.callback.callback_id}`;
      break;
    default:
      key = `${value.update_type}-${value.chat_id}-${value.timestamp}`;
  }
  return key.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
}
