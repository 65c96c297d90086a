/**
 * Each chat's updates one after another, different chats' side by side. In long-polling mode grammY hands the
 * bot one update at a time and waits for its handler, so a handler that waits (a `/start` whose first fetch is
 * slow waits up to 10 s for the university) would hold every other chat's commands as long. A handler therefore
 * only queues its work in its chat's lane and returns: a chat waits for its own earlier commands (its answers
 * keep their order), never for another chat's.
 *
 * At most {@link MAX_HELD} updates are held by one process; beyond that, a handler waits for its own work as
 * before, so polling slows down instead of memory growing. Work still held when the process stops is awaited
 * by {@link ChatLanes.idle}; work of a process that dies is lost (its update ids are claimed already), which a
 * person sees as a command not answered.
 */

/** Updates one process holds at most before a handler waits for its own work. */
export const MAX_HELD = 256;

/** The lanes of every chat of one bot. */
export class ChatLanes {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly failed: (error: unknown) => void;
  private readonly maxHeld: number;
  private held = 0;

  /** `failed` hears what a piece of work threw (it is not rethrown: the update was handled). */
  constructor(failed: (error: unknown) => void, maxHeld = MAX_HELD) {
    this.failed = failed;
    this.maxHeld = maxHeld;
  }

  /** Queues `work` behind the chat's earlier work; resolves once it is queued (or, over the bound, done). */
  async run(chatId: string, work: () => Promise<void>): Promise<void> {
    this.held += 1;
    const previous = this.tails.get(chatId) ?? Promise.resolve();
    const done = previous
      .then(work)
      .catch(this.failed)
      .finally(() => {
        this.held -= 1;
        if (this.tails.get(chatId) === done) this.tails.delete(chatId);
      });
    this.tails.set(chatId, done);
    if (this.held > this.maxHeld) await done;
  }

  /** Resolves when every queued piece of work has ended. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}
