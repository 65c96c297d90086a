/**
 * One timetable's page: `GET /timetables/groups/:id`, `/timetables/employees/:id` and the signed-in person's
 * `/timetables/personal`, with their JSON preview endpoints (`…/preview?subgroup=…`) that the page's script asks
 * when the options change. A timetable never fetched is fetched on the first visit, within the client's limit
 * of new timetables, as the feed routes do; an unknown one answers a 404 page with the search box.
 *
 * The preview endpoint only ever encodes our own feed URL of a stored timetable with validated options, so it
 * is no QR generator for arbitrary text; its answers are cached per publication, options and language.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import QRCode from 'qrcode';
import type { CalDavTargetStore } from '../caldav/caldav-targets.ts';
import type { Config } from '../config.ts';
import type { FeedSettings } from '../feeds/build-feed.ts';
import type { GoogleTargetStore } from '../google/google-targets.ts';
import { activateSource } from '../jobs/activation.ts';
import { enqueueRefresh, type Queues } from '../jobs/queues.ts';
import { RateLimitedError } from '../lib/errors.ts';
import { retryAfterSeconds } from '../lib/retry-after.ts';
import type { Logger } from '../logger.ts';
import { emailOn } from '../notify/email/channel.ts';
import type { TelegramBot } from '../notify/telegram/bot.ts';
import { FeedUnavailableError, type OptionRefusedError, UnknownTimetableError } from '../serving/errors.ts';
import { type FeedProvider, RETRY_AFTER_SECONDS } from '../serving/feed-provider.ts';
import { optionsMisfits } from '../serving/variant-render.ts';
import { unlistedCounts } from '../store/change-bounds.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { Snapshot, SnapshotStore } from '../store/snapshot-store.ts';
import type { Subscription } from '../store/subscription-store.ts';
import { personalHeading } from '../subscriptions/profile.ts';
import { studyPlanView } from '../subscriptions/study-plan-view.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import { defaultTitleTemplate, mergeOptionValues, type OptionValues, optionValuesOf } from '../timetable/event-text.ts';
import type { PublishedState } from '../timetable/publication.ts';
import { parseSource, type SourceKey, sourceKey, sourceOf } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import {
  type FeedLinks,
  feedLinks,
  maxStartPath,
  notifyFields,
  optionsQuery,
  type PushLinks,
  pushLinks,
  telegramStartPath,
} from '../web/feed-links.ts';
import { html } from '../web/html.ts';
import type { Lang } from '../web/i18n.ts';
import type { EmailFormView } from '../web/notify-block.ts';
import { alarmText } from '../web/options-form.ts';
import { optionsNotice, PERSONAL_ACTIONS, personalManageSection } from '../web/personal-manage.ts';
import { planSection } from '../web/plan-section.ts';
import { isPhone, platformOf } from '../web/platform.ts';
import {
  loadingPage,
  notFoundPage,
  type PageKind,
  rateLimitedPage,
  type TimetablePageView,
  timetablePage,
} from '../web/timetable-page.ts';
import { eventPreview, timetableWeeks } from '../web/timetable-view.ts';
import { sendError } from './error-answer.ts';
import { HttpError } from './errors.ts';
import { requestLang, sendPage } from './pages.ts';
import {
  clearPersonalSession,
  holdsSignInCookie,
  type PersonalSessionDeps,
  personalControls,
  readPersonalSession,
} from './personal-session.ts';
import { filledOptionFields, readSubscriberOptions } from './subscriber-query.ts';

/** Change records younger than this mark their moved classes on the page. */
const MOVES_SHOWN_MS = 14 * 24 * 3600_000;
/** A visit reactivates an inactive timetable at most this often per process. */
const VISIT_NOTE_MS = 10 * 60_000;
/** What the personal page answers with: it shows a secret feed URL. */
const PERSONAL_CACHE = 'private, no-store';

type Query = Record<string, string | string[] | undefined>;
type PublicKind = 'group' | 'employee';

/** A stored timetable: its last good fetch and what its feed published from it. */
interface Stored {
  source: SourceKey;
  snapshot: Snapshot;
  published: PublishedState;
}

/**
 * The options a page or preview asks for, checked against the timetable: none applied when one was refused
 * (`refused` holds a refusal per bad field), and the fields as typed, which the form shows again.
 */
interface PageOptions {
  options: SubscriberOptions;
  values: OptionValues;
  typed: Record<string, string | string[]>;
  refused: OptionRefusedError[];
  /** The subscription's saved options, shown because the query asked for none: the plain feed URL serves them. */
  saved?: boolean;
}

/** What the timetable pages read, and reactivate a visited timetable with. */
export type TimetablePageDeps = PersonalSessionDeps &
  Parameters<typeof studyPlanView>[0] &
  Parameters<typeof activateSource>[0] & {
    readonly config: FeedSettings &
      Pick<Config, 'publicUrl' | 'timezone' | 'smtpUrl' | 'mailFrom' | 'secretKey' | 'mailDigestTime'> &
      Parameters<typeof enqueueRefresh>[1];
    readonly snapshots: Pick<SnapshotStore, 'load' | 'optionValues' | 'changes'>;
    readonly registry: Pick<SourceRegistry, 'get' | 'isActive'>;
    readonly queues: Queues;
    readonly google: { readonly configured: boolean; readonly targets: Pick<GoogleTargetStore, 'canStoreCredentials'> };
    readonly caldav: { readonly targets: Pick<CalDavTargetStore, 'canStoreCredentials'> };
    readonly logger: Pick<Logger, 'warn'>;
    readonly now: () => number;
  };

/** A messenger's bot as the pages need it: its username, undefined while the messenger cannot be asked. */
export interface BotName {
  username(): Promise<string | undefined>;
}

/** The bots whose links the pages show, each when it is on. */
export interface PageBots {
  readonly telegram?: Pick<TelegramBot, 'username'> | undefined;
  readonly max?: BotName | undefined;
}

/**
 * Registers the timetable pages and their preview endpoints. First visits fetch through `provider`, the feed
 * routes' own: a visit joining a fetch under way costs nothing, and the cap on fetches waited for applies.
 */
export async function registerTimetablePageRoutes(
  app: FastifyInstance,
  ctx: TimetablePageDeps,
  provider: FeedProvider,
  bots: PageBots = {},
): Promise<void> {
  const pages = new TimetablePages(ctx, provider, bots);
  for (const kind of ['group', 'employee'] as const) {
    const path = kind === 'group' ? '/timetables/groups/:id' : '/timetables/employees/:id';
    app.get<{ Params: { id: string }; Querystring: Query }>(path, (request, reply) =>
      pages.publicPage(kind, request, reply),
    );
    app.get<{ Params: { id: string }; Querystring: Query }>(`${path}/preview`, (request, reply) =>
      pages.publicPreview(kind, request, reply),
    );
  }
  app.get<{ Querystring: Query }>('/timetables/personal', (request, reply) => pages.personalPage(request, reply));
  app.get<{ Querystring: Query }>('/timetables/personal/preview', (request, reply) =>
    pages.personalPreview(request, reply),
  );
}

/** What the pages share: their deps, the feed provider, and the caches of QR codes and visits. */
class TimetablePages {
  private readonly ctx: TimetablePageDeps;
  private readonly provider: FeedProvider;
  private readonly bots: PageBots;
  private readonly qrCodes = new LRUCache<string, string>({ max: 1000 });
  private readonly previews = new LRUCache<string, string>({ max: 500 });
  private readonly visits = new LRUCache<SourceKey, true>({ max: 10_000, ttl: VISIT_NOTE_MS });

  constructor(ctx: TimetablePageDeps, provider: FeedProvider, bots: PageBots) {
    this.ctx = ctx;
    this.provider = provider;
    this.bots = bots;
  }

  async publicPage(
    kind: PublicKind,
    request: FastifyRequest<{ Params: { id: string }; Querystring: Query }>,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    const lang = requestLang(this.ctx, request, reply);
    const notFound = () => sendPage(reply, notFoundPage({ lang, url: request.url, kind }), { status: 404 });
    const source = publicSource(kind, request.params.id);
    if (source === undefined) return notFound();
    let stored: Stored | 'not-found' | 'loading';
    try {
      stored = await this.loadOrFetch(source, request.ip);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      const seconds = retryAfterSeconds(error.retryAfterMs);
      reply.header('retry-after', String(seconds));
      return sendPage(reply, rateLimitedPage({ lang, url: request.url, retryAfterSeconds: seconds }), { status: 429 });
    }
    if (stored === 'not-found') return notFound();
    if (stored === 'loading') {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      const page = loadingPage({ lang, url: request.url, retryAfterSeconds: RETRY_AFTER_SECONDS });
      return sendPage(reply, page, { status: 503 });
    }
    this.noteVisit(source);
    const id = source.slice(kind.length + 1);
    const base = kind === 'group' ? `/timetables/groups/${id}` : `/timetables/employees/${id}`;
    const view = await this.pageView(lang, request, stored, {
      kind,
      base,
      feedPath: publicFeedPath(kind, id),
    });
    return sendPage(reply, timetablePage(view), { status: refusedStatus(view) });
  }

  async personalPage(request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply): Promise<FastifyReply> {
    const lang = requestLang(this.ctx, request, reply);
    const session = await readPersonalSession(this.ctx, request);
    if (session === undefined) {
      // A browser whose sign-in ended elsewhere is told so at home (its dead cookie forgotten), not sent silently.
      const ended = holdsSignInCookie(request);
      if (ended) clearPersonalSession(this.ctx, reply);
      const home = ended ? '/?done=signed-out-elsewhere' : '/';
      return reply.code(303).header('location', home).header('cache-control', 'no-store').send();
    }
    const { subscription, token } = session;
    const source = subscription.source;
    const { snapshot, published } = await this.ctx.snapshots.load(source);
    const stored = snapshot && published ? { source, snapshot, published } : undefined;
    const context = {
      kind: 'personal' as const,
      base: '/timetables/personal',
      feedPath: `/feeds/personal/${token}.ics`,
      saved: subscription.feedOptions,
      save: { action: PERSONAL_ACTIONS.options, notice: optionsNotice(lang, request.query.done) },
    };
    const view = stored
      ? await this.pageView(lang, request, stored, context)
      : await this.emptyView(lang, request, subscription, context);
    view.name = personalHeading(snapshot?.name ?? subscription.name, subscription.group?.name);
    view.needsCredential = subscription.status === 'needs-credential';
    view.private = true;
    if (subscription.group !== undefined)
      view.lead = html`<p class="lead">${groupWord(lang)} <a href="/timetables/groups/${String(subscription.group.id)}">${subscription.group.name}</a></p>`;
    view.extra = [
      planSection(await studyPlanView(this.ctx, subscription), lang),
      personalManageSection({
        lang,
        subscription,
        done: request.query.done,
        ...(await personalControls(this.ctx, session)),
        timezone: this.ctx.config.timezone,
      }),
    ].join('');
    return sendPage(reply, timetablePage(view), { status: refusedStatus(view), cacheControl: PERSONAL_CACHE });
  }

  async publicPreview(
    kind: PublicKind,
    request: FastifyRequest<{ Params: { id: string }; Querystring: Query }>,
    reply: FastifyReply,
  ): Promise<unknown> {
    const source = publicSource(kind, request.params.id);
    if (source === undefined)
      throw new HttpError('SOURCE_NOT_FOUND', {
        en: `no ${kind} ${JSON.stringify(request.params.id)}`,
        ru: `нет ${kind === 'group' ? 'группы' : 'преподавателя'} ${JSON.stringify(request.params.id)}`,
      });
    const stored = await this.load(source);
    if (stored === undefined)
      throw new HttpError('TIMETABLE_NOT_LOADED', {
        en: `the timetable of ${kind} ${request.params.id} is not loaded yet`,
        ru: `расписание ${kind === 'group' ? 'группы' : 'преподавателя'} ${request.params.id} ещё не загружено`,
      });
    const id = source.slice(kind.length + 1);
    const feedPath = publicFeedPath(kind, id);
    reply.header('cache-control', 'private, max-age=60').header('vary', 'Accept-Language, Cookie');
    return this.preview(requestLang(this.ctx, request, reply), request, stored, feedPath, reply);
  }

  async personalPreview(request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply): Promise<unknown> {
    const session = await readPersonalSession(this.ctx, request);
    if (session === undefined)
      throw new HttpError('SIGN_IN_REQUIRED', {
        en: 'sign in first: this browser holds no personal timetable',
        ru: 'сначала войдите: в этом браузере нет личного расписания',
      });
    const stored = await this.load(session.subscription.source);
    if (stored === undefined)
      throw new HttpError('TIMETABLE_NOT_LOADED', {
        en: 'your timetable is not loaded yet',
        ru: 'ваше расписание ещё не загружено',
      });
    reply.header('cache-control', PERSONAL_CACHE);
    const feedPath = `/feeds/personal/${session.token}.ics`;
    return this.preview(requestLang(this.ctx, request, reply), request, stored, feedPath, reply);
  }

  /**
   * The preview endpoint's answer: the links, the QR code and one event, for options that fit. Refused ones
   * answer 400 INVALID_QUERY in the page's language, with the first bad `field` and the reason for each of
   * them (`fields`), which the page's script shows beside each field.
   */
  private async preview(
    lang: Lang,
    request: FastifyRequest<{ Querystring: Query }>,
    stored: Stored,
    feedPath: string,
    reply: FastifyReply,
  ) {
    const { options, refused } = await this.pageOptions(request.query, stored);
    const [first] = refused;
    if (first !== undefined) {
      const fields = Object.fromEntries(refused.map((error) => [error.field, error.fieldWords[lang]]));
      const error = new HttpError('INVALID_QUERY', first.fieldWords);
      return sendError(request, reply, error, { field: first.field, fields }, lang);
    }
    const defaultTitle = defaultTitleTemplate(sourceOf(stored.source).kind);
    const messengers = await this.messengerLinks(stored.source, options);
    const email = this.emailForm(stored.source, options);
    const key = JSON.stringify([
      feedPath,
      stored.published.stamp,
      optionsQuery(options, defaultTitle),
      lang,
      messengers,
      email !== undefined,
    ]);
    let body = this.previews.get(key);
    if (body === undefined) {
      const links = feedLinks(this.ctx.config.publicUrl, feedPath, options, defaultTitle);
      Object.assign(links, messengers, this.pushLinks(stored.source, options, defaultTitle));
      const event = eventPreview(stored.snapshot, stored.published, options);
      body = JSON.stringify({
        ...links,
        // The e-mail form's hidden option fields (data-notify-option), where the form is shown.
        ...(email === undefined ? {} : { notify: { subgroup: email.subgroup, exclude: email.exclude } }),
        qrSvg: await this.qrSvg(links.feedUrl),
        preview:
          event === undefined
            ? null
            : {
                title: event.title,
                location: event.location,
                description: event.description,
                alarm: alarmText(event.alarmMinutes, lang),
              },
      });
      this.previews.set(key, body);
    }
    return reply.type('application/json; charset=utf-8').send(body);
  }

  /** The view of a stored timetable's page. */
  private async pageView(
    lang: Lang,
    request: FastifyRequest<{ Querystring: Query }>,
    stored: Stored,
    context: {
      kind: PageKind;
      base: string;
      feedPath: string;
      /** The personal subscription's saved options, which its plain feed URL serves. */
      saved?: SubscriberOptions | undefined;
      /** The personal page's: where the options form saves its values. */
      save?: { action: string; notice: string } | undefined;
    },
  ): Promise<TimetablePageView> {
    const { snapshot, published, source } = stored;
    const chosen = await this.pageOptions(request.query, stored, context.saved);
    const now = this.ctx.now();
    const [changes, state] = await Promise.all([this.ctx.snapshots.changes(source), this.ctx.registry.get(source)]);
    const recent = changes.filter((change) => change.at >= now - MOVES_SHOWN_MS);
    const moves = recent.flatMap((change) => change.moved);
    const weeks = timetableWeeks({
      snapshot,
      published,
      settings: this.ctx.config,
      options: chosen.options,
      moves,
      now,
    });
    // The plain feed URL serves the saved options already: its links need no parameters.
    const defaultTitle = defaultTitleTemplate(sourceOf(source).kind);
    const links = feedLinks(
      this.ctx.config.publicUrl,
      context.feedPath,
      chosen.saved ? {} : chosen.options,
      defaultTitle,
    );
    // A calendar connected, or a messenger started, from here follows the options shown, the saved ones included.
    Object.assign(links, await this.messengerLinks(source, chosen.options));
    Object.assign(links, this.pushLinks(source, chosen.options, defaultTitle));
    return {
      lang,
      url: request.url,
      kind: context.kind,
      name: snapshot.name,
      timezone: this.ctx.config.timezone,
      weeks,
      staleAsOf: state?.status === 'stale' ? (state.lastSuccess ?? snapshot.fetchedAt) : undefined,
      unmarkedMoves: recent.reduce((sum, change) => sum + unlistedCounts(change).moved, 0),
      options: {
        action: context.base,
        previewPath: `${context.base}/preview`,
        values: chosen.values,
        options: chosen.options,
        typed: chosen.typed,
        fieldErrors: Object.fromEntries(chosen.refused.map((error) => [error.field, error.fieldWords[lang]])),
        defaultTitle,
        preview: eventPreview(snapshot, published, chosen.options),
        savedApplied: chosen.saved === true,
        save: context.save,
      },
      subscribe: await this.subscribeView(request, links, this.emailForm(source, chosen.options)),
    };
  }

  /**
   * The personal page before its first fetch: the subscribe links (without options), a loading note, and the
   * options form to save options with (no live preview: there is no class to show yet).
   */
  private async emptyView(
    lang: Lang,
    request: FastifyRequest,
    subscription: Subscription,
    context: {
      kind: PageKind;
      base: string;
      feedPath: string;
      save?: { action: string; notice: string } | undefined;
    },
  ): Promise<TimetablePageView> {
    const links: FeedLinks = feedLinks(this.ctx.config.publicUrl, context.feedPath, {});
    Object.assign(links, await this.messengerLinks(subscription.source, {}));
    const saved = subscription.feedOptions ?? {};
    Object.assign(links, this.pushLinks(subscription.source, saved));
    return {
      lang,
      url: request.url,
      kind: context.kind,
      name: subscription.name,
      timezone: this.ctx.config.timezone,
      weeks: undefined,
      options: {
        action: context.base,
        values: await this.ctx.snapshots.optionValues(subscription.source),
        options: saved,
        preview: undefined,
        savedApplied: Object.keys(saved).length > 0,
        save: context.save,
      },
      subscribe: await this.subscribeView(request, links, this.emailForm(subscription.source, {})),
    };
  }

  /**
   * The options of a query as the page offers them: empty fields (a form sent without script) are no option, a
   * title equal to the default is none, and the options must fit the subgroups and kinds the timetable ever
   * had. A refused field comes back in `refused` (each bad field, not only the first) with no options applied.
   * A query with no option at all gives the `saved` ones (a personal subscription's), when there are any.
   */
  private async pageOptions(query: Query, stored: Stored, saved?: SubscriberOptions): Promise<PageOptions> {
    const values = mergeOptionValues(
      await this.ctx.snapshots.optionValues(stored.source),
      optionValuesOf(stored.snapshot.entries),
    );
    const typed = filledOptionFields(query, defaultTitleTemplate(sourceOf(stored.source).kind));
    if (Object.keys(typed).length === 0 && saved !== undefined && Object.keys(saved).length > 0)
      return { options: saved, values, typed, refused: [], saved: true };
    const read = readSubscriberOptions(typed);
    const refused = [...read.refused, ...optionsMisfits(values, read.options)];
    return { options: refused.length === 0 ? read.options : {}, values, typed, refused };
  }

  /** A stored timetable, or undefined. */
  private async load(source: SourceKey): Promise<Stored | undefined> {
    const { snapshot, published } = await this.ctx.snapshots.load(source);
    return snapshot && published ? { source, snapshot, published } : undefined;
  }

  /**
   * The stored timetable of a public source, fetching a never fetched one first as a first feed request does
   * (the feed provider's fetch, joined for free when under way, within the client's limit of new timetables:
   * RateLimitedError beyond it) and waiting for it a while. Too many fetches at once also reads 'loading'.
   */
  private async loadOrFetch(source: SourceKey, ip: string): Promise<Stored | 'not-found' | 'loading'> {
    const stored = await this.load(source);
    if (stored !== undefined) return stored;
    try {
      await this.provider.requireFeed(source, ip);
    } catch (error) {
      if (error instanceof UnknownTimetableError) return 'not-found';
      if (error instanceof FeedUnavailableError) return 'loading';
      throw error;
    }
    return (await this.load(source)) ?? 'loading';
  }

  /** A visit to an inactive timetable makes it active again and refreshes it (the old data is shown meanwhile). */
  private noteVisit(source: SourceKey): void {
    if (this.visits.has(source)) return;
    this.visits.set(source, true);
    const reactivate = async () => {
      if (await this.ctx.registry.isActive(source)) return;
      await activateSource(this.ctx, source);
      await enqueueRefresh(this.ctx.queues, this.ctx.config, source, { reason: 'demand', now: this.ctx.now() });
    };
    reactivate().catch((error: unknown) => {
      this.visits.delete(source);
      this.ctx.logger.warn({ err: error, source }, 'could not reactivate a visited timetable');
    });
  }

  /**
   * The subscribe block's view: its steps are ordered for the reader's device, and a phone gets no QR code
   * (the page answers `no-store`, so no cache keeps one device's page for another).
   */
  private async subscribeView(
    request: FastifyRequest,
    links: FeedLinks,
    email: EmailFormView | undefined,
  ): Promise<TimetablePageView['subscribe']> {
    const platform = platformOf(request.headers['user-agent']);
    const qrSvg = isPhone(platform) ? '' : await this.qrSvg(links.feedUrl);
    return { links, qrSvg, platform, email };
  }

  /** The push links (Google, CalDAV) that connect a calendar following `options`, where each push is on. */
  private pushLinks(source: SourceKey, options: SubscriberOptions, defaultTitle?: string): PushLinks {
    const on = { google: this.pushAvailable(), caldav: this.ctx.caldav.targets.canStoreCredentials };
    return pushLinks(source, options, on, defaultTitle ?? defaultTitleTemplate(sourceOf(source).kind));
  }

  /**
   * The page's «Уведомления в MAX» and «Уведомления в Telegram» links with these options, each when its bot is on
   * and its messenger said the bot's name (the link leads there; without the name it would lead nowhere).
   */
  private async messengerLinks(
    source: SourceKey,
    options: SubscriberOptions,
  ): Promise<Pick<FeedLinks, 'max' | 'telegram'>> {
    const { max, telegram } = this.bots;
    const [maxName, telegramName] = await Promise.all([max?.username(), telegram?.username()]);
    const links: Pick<FeedLinks, 'max' | 'telegram'> = {};
    if (maxName !== undefined) links.max = maxStartPath(source, options);
    if (telegramName !== undefined) links.telegram = telegramStartPath(source, options);
    return links;
  }

  /** The e-mail form's view with these options, where e-mail is on (`SMTP_URL`, `MAIL_FROM` and `SECRET_KEY`). */
  private emailForm(source: SourceKey, options: SubscriberOptions): EmailFormView | undefined {
    if (!emailOn(this.ctx.config)) return undefined;
    return { source, ...notifyFields(source, options), digestTime: this.ctx.config.mailDigestTime };
  }

  private pushAvailable(): boolean {
    return this.ctx.google.configured && this.ctx.google.targets.canStoreCredentials;
  }

  /** The QR code of one of our feed URLs, as SVG markup. */
  private async qrSvg(url: string): Promise<string> {
    let svg = this.qrCodes.get(url);
    if (svg === undefined) {
      svg = await QRCode.toString(url, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
      this.qrCodes.set(url, svg);
    }
    return svg;
  }
}

/** The feed path of a public timetable (`id`: the group's or employee's number). */
function publicFeedPath(kind: PublicKind, id: string): string {
  return kind === 'group' ? `/feeds/groups/${id}.ics` : `/feeds/employees/${id}.ics`;
}

/** The source of a page's id, or undefined when the id cannot be one (not a positive integer). */
function publicSource(kind: PublicKind, id: string): SourceKey | undefined {
  try {
    return sourceKey(parseSource(`${kind}:${id}`));
  } catch (error) {
    if (error instanceof InvalidSourceError) return undefined;
    throw error;
  }
}

/** 400 when the page shows options it refused, else 200. */
function refusedStatus(view: TimetablePageView): number {
  const options = view.options;
  if (options === undefined) return 200;
  return options.error === undefined && Object.keys(options.fieldErrors ?? {}).length === 0 ? 200 : 400;
}

function groupWord(lang: Lang): string {
  return lang === 'ru' ? 'Группа:' : 'Group:';
}
