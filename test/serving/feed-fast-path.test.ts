/** The feed fast path on its own: what it leaves to fastify before it even looks at the feed cache. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { NOSNIFF } from '../../src/http/security-headers.ts';
import { FeedCounters } from '../../src/serving/feed-counters.ts';
import { answerFirst, FeedFastPath } from '../../src/serving/feed-fast-path.ts';
import { FeedForms } from '../../src/serving/feed-forms.ts';
import { encodeFeed } from '../../src/store/feed-store.ts';

const FEED = FeedForms.served(await encodeFeed('BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n', Date.UTC(2025, 9, 1)));
const IDENTITY = await FEED.forms.get('identity');

function fastPath() {
  const cachedFeed = vi.fn(() => FEED);
  const counter = new Counter({
    name: 'served',
    help: 'served',
    labelNames: ['kind', 'status'],
    registers: [new Registry()],
  });
  return { path: new FeedFastPath({ cachedFeed }, new FeedCounters(counter), NOSNIFF, () => undefined), cachedFeed };
}

function exchange(method: string, url: string) {
  const request = { method, url, headers: {} } as unknown as IncomingMessage;
  const response = { writeHead: vi.fn(), end: vi.fn() };
  return { request, response, raw: response as unknown as ServerResponse };
}

describe('the feed fast path', () => {
  it('answers a cached public feed, and once closed leaves every request to fastify untouched', () => {
    const { path, cachedFeed } = fastPath();
    const open = exchange('GET', '/feeds/groups/4242.ics');
    expect(path.handle(open.request, open.raw)).toBe(true);
    expect(open.response.writeHead).toHaveBeenCalledWith(200, expect.any(Array));
    expect(open.response.end).toHaveBeenCalledWith(IDENTITY);
    path.close();
    cachedFeed.mockClear();
    const closing = exchange('GET', '/feeds/groups/4242.ics');
    expect(path.handle(closing.request, closing.raw)).toBe(false);
    expect(cachedFeed).not.toHaveBeenCalled();
    expect(closing.response.writeHead).not.toHaveBeenCalled();
  });

  it('never looks up anything but GET and HEAD of a public feed path', () => {
    const { path, cachedFeed } = fastPath();
    for (const [method, url] of [
      ['POST', '/feeds/groups/4242.ics'],
      ['GET', '/feeds/personal/abcdefghijklmnopqrstuv.ics'],
      ['GET', '/feeds/groups/4242.ics?subgroup=1'],
      ['GET', '/feeds/groups/0042.ics'],
      ['HEAD', '/feeds/employees/x.ics'],
    ] as const) {
      const { request, raw, response } = exchange(method, url);
      expect(path.handle(request, raw), `${method} ${url}`).toBe(false);
      expect(response.writeHead).not.toHaveBeenCalled();
    }
    expect(cachedFeed).not.toHaveBeenCalled();
  });
});

describe('answerFirst', () => {
  /** A server whose framework listener records what reaches it, with the fast path in front of it. */
  function serverWith(handler: (request: IncomingMessage, response: ServerResponse) => boolean) {
    const framework = vi.fn();
    const server = createServer(framework);
    const onError = vi.fn();
    answerFirst(server, handler, onError);
    const emit = (headersSent: boolean) => {
      const response = { headersSent, destroy: vi.fn() };
      server.emit('request', {} as IncomingMessage, response as unknown as ServerResponse);
      return response;
    };
    return { framework, onError, emit };
  }

  it('gives the framework a request the fast path failed on before answering, and reports the error', () => {
    const fault = new Error('bad stored feed');
    const { framework, onError, emit } = serverWith(() => {
      throw fault;
    });
    const response = emit(false);
    expect(onError).toHaveBeenCalledWith(fault);
    expect(framework).toHaveBeenCalledTimes(1);
    expect(response.destroy).not.toHaveBeenCalled();
  });

  it('cuts the connection when the fast path failed halfway through its answer', () => {
    const { framework, onError, emit } = serverWith(() => {
      throw new Error('after writeHead');
    });
    const response = emit(true);
    expect(onError).toHaveBeenCalledTimes(1);
    expect(response.destroy).toHaveBeenCalledTimes(1);
    expect(framework).not.toHaveBeenCalled();
  });
});
