/**
 * A feed as the api serves it. Redis holds a feed's gzip form only (store/feed-store.ts); the identity body and
 * the brotli form are made from it here, when a client first asks for them, and then kept with the feed so that
 * the next request is answered from memory as before. Their bytes count in the feed cache's budget.
 */
import { brotliFeed, type FeedValidators, feedBody, identityLength, type StoredFeed } from '../store/feed-store.ts';
import type { FeedEncoding } from './negotiate.ts';

/**
 * Memory a served feed holds beyond its bytes, counted in the budget with them: the cache's entry, the forms'
 * object, the header lists of feed-headers.ts and the fast path's answers (three codings, 200 and 304 each),
 * which together measured about 3 KB per feed with every coding asked for.
 */
export const FEED_OVERHEAD_BYTES = 3 * 1024;

/**
 * A feed to answer with: its validators and its forms. Copies with other validators (the stale mark of an
 * outage, a personal feed's later Last-Modified) share the forms, so a form made for one is there for all.
 */
export interface ServedFeed extends FeedValidators {
  forms: FeedForms;
}

/** The bytes of one feed in each coding: gzip always, identity and brotli once made. */
export class FeedForms {
  readonly gzip: Buffer;
  private identity: Buffer | undefined;
  private brotli: Buffer | undefined;
  /** Forms being made, so that concurrent first requests for one share its making. */
  private readonly making = new Map<'identity' | 'br', Promise<Buffer>>();
  /** Told when a form has been kept, so that the cache holding these forms counts their bytes again. */
  onGrow: (() => void) | undefined;

  /** Forms made already (a rendered variant has all three) are given, the others are made on demand. */
  constructor(gzip: Buffer, made: { identity?: Buffer; brotli?: Buffer } = {}) {
    this.gzip = gzip;
    this.identity = made.identity;
    this.brotli = made.brotli;
  }

  /** A stored feed as served: only its gzip form exists yet. */
  static served(stored: StoredFeed): ServedFeed {
    const { gzip, ...validators } = stored;
    return { ...validators, forms: new FeedForms(gzip) };
  }

  /** The bytes of `encoding` if they are made already; else undefined (see {@link get}). */
  ready(encoding: FeedEncoding): Buffer | undefined {
    return encoding === 'gzip' ? this.gzip : encoding === 'br' ? this.brotli : this.identity;
  }

  /** The bytes of `encoding`, made now when they are not yet (once, however many ask at the same time). */
  get(encoding: FeedEncoding): Promise<Buffer> {
    const ready = this.ready(encoding);
    if (ready !== undefined) return Promise.resolve(ready);
    const form = encoding === 'br' ? 'br' : 'identity';
    let making = this.making.get(form);
    if (making === undefined) {
      making = this.make(form).finally(() => this.making.delete(form));
      this.making.set(form, making);
    }
    return making;
  }

  /** The length of the identity body, known without making it. */
  get identityLength(): number {
    return this.identity?.length ?? identityLength(this.gzip);
  }

  /** The bytes held: every form made, and {@link FEED_OVERHEAD_BYTES}. */
  get bytes(): number {
    return this.gzip.length + (this.identity?.length ?? 0) + (this.brotli?.length ?? 0) + FEED_OVERHEAD_BYTES;
  }

  /**
   * Makes one form on libuv's thread pool. A brotli form is compressed from an identity body that is not kept
   * unless identity was asked for too: it is thirty to forty times the size of the compressed forms.
   */
  private async make(form: 'identity' | 'br'): Promise<Buffer> {
    let made: Buffer;
    if (form === 'identity') {
      made = await feedBody(this);
      this.identity = made;
    } else {
      made = await brotliFeed(this.identity ?? (await feedBody(this)));
      this.brotli = made;
    }
    this.onGrow?.();
    return made;
  }
}
