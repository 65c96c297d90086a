/** `/` as rendered: the token's help link when the deployment names one, the example group, the miss messages. */
import { describe, expect, it } from 'vitest';
import { homePage, type SearchOutcome } from '../../src/web/home-page.ts';

const render = (view: Partial<Parameters<typeof homePage>[0]>) =>
  homePage({ lang: 'ru', url: '/', signIn: { available: true }, ...view });

describe('homePage', () => {
  it('links to the page where the university shows the token, when the deployment names it', () => {
    const withLink = render({ tokenHelpUrl: 'https://university.example/profile/tokens' });
    expect(withLink).toContain(
      '<a href="https://university.example/profile/tokens" rel="noopener">Где найти токен</a>',
    );
    expect(render({})).not.toContain('Где найти токен');
  });

  it('speaks of a teacher for a name and of a group for a number, in the language of the page', () => {
    const results = (looksLike: 'name' | 'group'): SearchOutcome => ({
      kind: 'results',
      looksLike,
      groups: [],
      groupTotal: 0,
      teachers: [],
    });
    const name = render({ query: 'Щукарь', search: results('name') });
    expect(name).toContain('Преподаватель «Щукарь» не найден.');
    const section = /<section id="search-results"[\s\S]*?<\/section>/.exec(name)?.[0] ?? '';
    expect(section).toContain('Преподаватель');
    expect(section).not.toMatch(/групп|номер/i);
    const group = render({ query: ' 99-999 ', search: results('group'), exampleGroup: '09-351' });
    expect(group).toContain('Группа «99-999» не найдена. Проверьте номер: например, 09-351.');
    const english = homePage({
      lang: 'en',
      url: '/',
      signIn: { available: true },
      query: 'Shchukar',
      search: results('name'),
    });
    expect(english).toContain('No teacher “Shchukar” found.');
  });
});
