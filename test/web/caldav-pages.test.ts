import { describe, expect, it } from 'vitest';
import { caldavConnectPage, nextcloudDavUrl } from '../../src/web/caldav-connect-page.ts';

const base = {
  lang: 'ru' as const,
  url: '/caldav/connect?source=group:4242&preset=yandex',
  source: 'group:4242',
  name: 'ИВТ-21',
  backUrl: '/timetables/groups/4242',
  available: true,
  optionFields: {},
  optionsLine: 'Вся группа',
  optionsUrl: '/timetables/groups/4242#options',
};

describe('the CalDAV connect page', () => {
  it('shows only the providers until one is chosen, then its form with the provider’s steps', () => {
    const chooser = caldavConnectPage({ ...base, preset: undefined });
    const hrefs = [...chooser.matchAll(/href="(\/caldav\/[^"]*)"/g)].map((match) =>
      (match[1] ?? '').replaceAll('&#61;', '=').replaceAll('&#38;', '&'),
    );
    expect(hrefs).toContain('/caldav/connect?source=group%3A4242&preset=icloud#caldav-form');
    expect(chooser).not.toContain('<form');
    const yandex = caldavConnectPage({ ...base, preset: 'yandex' });
    expect(yandex).toContain('https://caldav.yandex.ru');
    expect(yandex).toContain('Календарь CalDAV');
    // A fixed server asks for no address; Nextcloud does.
    expect(yandex).not.toContain('name="address"');
    expect(caldavConnectPage({ ...base, preset: 'nextcloud' })).toContain('name="address"');
  });

  it('keeps what was typed, never a password, and offers the account’s calendars when the server made none', () => {
    const page = caldavConnectPage({
      ...base,
      preset: 'other',
      values: { address: 'https://dav.example.org/', username: 'ivan' },
      error: 'Сервер не даёт создать отдельный календарь',
      calendars: [
        { url: 'https://dav.example.org/ivan/home/', displayName: 'Дом' },
        { url: 'https://dav.example.org/ivan/work/', displayName: '' },
      ],
    });
    expect(page).toContain('value="https://dav.example.org/"');
    expect(page).toContain('value="ivan"');
    expect(page).toMatch(/<input type="password" id="caldav-password" name="password" required[^>]*>/);
    expect(page).not.toMatch(/id="caldav-password"[^>]*value=/);
    expect(page).toContain(
      'type="radio" name="calendarUrl" value="https://dav.example.org/ivan/home/" required checked',
    );
    // A calendar without a name is offered by its URL.
    expect(page).toContain('> https://dav.example.org/ivan/work/</label>');
    expect(page).toContain('role="alert"');
  });

  it('carries the options through every provider and the form, and says a misfit at the top with the way back', () => {
    const typed = { subgroup: '2', exclude: ['лекция', 'семинар'] };
    const page = caldavConnectPage({
      ...base,
      preset: 'icloud',
      optionFields: typed,
      optionsLine: 'Подгруппа 2, без лекций, семинаров',
      optionsUrl: '/timetables/groups/4242?subgroup=2#options',
    })
      .replaceAll('&#61;', '=')
      .replaceAll('&#38;', '&');
    expect(page).toContain('<span data-options-line>Подгруппа 2, без лекций, семинаров</span>');
    expect(page).toContain(
      'href="/caldav/connect?source=group%3A4242&preset=yandex&subgroup=2&exclude=%D0%BB%D0%B5%D0%BA%D1%86%D0%B8%D1%8F&exclude=%D1%81%D0%B5%D0%BC%D0%B8%D0%BD%D0%B0%D1%80#caldav-form"',
    );
    expect(page).toContain(
      '<input type="hidden" name="exclude" value="лекция">\n<input type="hidden" name="exclude" value="семинар">',
    );
    expect(page).toContain('href="https://account.apple.com/"');
    const refused = caldavConnectPage({
      ...base,
      preset: 'yandex',
      optionFields: { subgroup: '7' },
      optionsLine: 'Подгруппа 7',
      optionsRefused: { subgroup: 'В этом расписании нет подгруппы 7.' },
      optionsUrl: '/timetables/groups/4242?subgroup=7#options',
    }).replaceAll('&#61;', '=');
    expect(refused).not.toContain('data-options-line');
    expect(refused).toContain(
      '<li data-field="subgroup"><strong>Подгруппа:</strong> В этом расписании нет подгруппы 7.</li>',
    );
    expect(refused).toContain('<a href="/timetables/groups/4242?subgroup=7#options" autofocus>');
  });

  it('says so, with no form, where the service cannot keep passwords', () => {
    const page = caldavConnectPage({ ...base, preset: 'yandex', available: false });
    expect(page).not.toContain('<form');
    expect(page).toContain('не настроена');
  });
});

describe('a Nextcloud address as people know it', () => {
  it('becomes its DAV root', () => {
    expect(nextcloudDavUrl('https://cloud.example.org')).toBe('https://cloud.example.org/remote.php/dav');
    expect(nextcloudDavUrl('cloud.example.org/')).toBe('https://cloud.example.org/remote.php/dav');
    expect(nextcloudDavUrl('https://example.org/nextcloud/index.php/apps/calendar')).toBe(
      'https://example.org/nextcloud/remote.php/dav',
    );
    expect(nextcloudDavUrl('https://cloud.example.org/remote.php/dav/calendars/ivan/')).toBe(
      'https://cloud.example.org/remote.php/dav',
    );
  });
});
