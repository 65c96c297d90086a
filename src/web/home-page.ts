/**
 * `/`: find a group or a teacher by name (`/?q=…`, a link that can be shared), or sign in with a university
 * credential for a personal timetable. Groups come from the service's group directory, teachers from the
 * university's search; a teacher search that failed leaves the group results and says so.
 */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { personalNotice } from './personal-manage.ts';

const words = messages({
  ru: {
    title: 'Найти расписание',
    lead: 'Расписание группы или преподавателя — в вашем календаре. Все изменения приходят сами.',
    search: 'Группа или преподаватель',
    placeholder: 'Например, 09-351 или Иванов',
    find: 'Найти',
    results: 'Результаты поиска',
    groups: 'Группы',
    teachers: 'Преподаватели',
    nothing: 'Ничего не нашлось. Проверьте написание: для группы достаточно номера, например 09-351.',
    noGroups: 'Групп с таким названием нет.',
    noTeachers: 'Преподавателей с такой фамилией нет.',
    more: (shown: number, total: number) => `Показаны ${shown} из ${total}. Уточните запрос, чтобы найти остальные.`,
    tooShort: (min: number) => `Введите хотя бы ${min} символа: номер группы или фамилию преподавателя.`,
    tooLong: (max: number) => `Запрос слишком длинный: не больше ${max} символов.`,
    teachersUnavailable: 'Поиск преподавателей сейчас не отвечает, попробуйте чуть позже. Группы найдены как обычно.',
    teachersLimited: (seconds: number) =>
      `Слишком много поисков преподавателей подряд. Попробуйте через ${seconds} с. Группы найдены как обычно.`,
    personal: 'Личное расписание',
    personalLead:
      'Войдите с токеном из информационной системы университета — и получите своё расписание со всеми подгруппами и расписание своей группы.',
    credential: 'Токен университета',
    credentialHelp:
      'Мы проверим токен в университете и сохраним его только в зашифрованном виде, чтобы обновлять ваше расписание. Никому его не показываем.',
    signIn: 'Войти',
    signedIn: 'Вы уже вошли.',
    openPersonal: 'Открыть моё расписание',
    personalOff:
      'Личные расписания на этом сервере выключены: администратор не задал ключ шифрования (SECRET_KEY). Расписания групп и преподавателей работают.',
    errors: {
      empty: 'Вставьте токен в поле.',
      invalid: 'Это не похоже на токен: он состоит из латинских букв, цифр и знаков, не длиннее 4096 символов.',
      rejected: 'Университет не принял этот токен. Проверьте, что скопировали его целиком и он не устарел.',
      universityMessage: 'Ответ университета:',
      limited: (seconds: number) => `Слишком много попыток входа. Попробуйте через ${seconds} с.`,
      busy: (seconds: number) => `Университет сейчас перегружен запросами. Попробуйте через ${seconds} с.`,
      unavailable: 'Университет сейчас не отвечает, поэтому токен не удалось проверить. Попробуйте позже.',
    },
  },
  en: {
    title: 'Find a timetable',
    lead: "A group's or a teacher's timetable in your calendar. Every change arrives by itself.",
    search: 'Group or teacher',
    placeholder: 'For example 09-351 or Ivanov',
    find: 'Find',
    results: 'Search results',
    groups: 'Groups',
    teachers: 'Teachers',
    nothing: "Nothing found. Check the spelling: a group's number is enough, for example 09-351.",
    noGroups: 'No group has that name.',
    noTeachers: 'No teacher has that name.',
    more: (shown: number, total: number) => `Showing ${shown} of ${total}. Refine the search to find the others.`,
    tooShort: (min: number) => `Type at least ${min} characters: a group's number or a teacher's surname.`,
    tooLong: (max: number) => `The search is too long: at most ${max} characters.`,
    teachersUnavailable: 'The teacher search is not answering right now; try again shortly. Groups are found as usual.',
    teachersLimited: (seconds: number) =>
      `Too many teacher searches in a row. Try again in ${seconds} s. Groups are found as usual.`,
    personal: 'Your personal timetable',
    personalLead:
      "Sign in with your token from the university's information system to get your own timetable, subgroups and all, and your group's.",
    credential: 'University token',
    credentialHelp:
      'We check the token with the university and store it only encrypted, to keep your timetable up to date. We never show it to anyone.',
    signIn: 'Sign in',
    signedIn: 'You are signed in.',
    openPersonal: 'Open my timetable',
    personalOff:
      'Personal timetables are off on this server: the administrator has not set an encryption key (SECRET_KEY). Group and teacher timetables work.',
    errors: {
      empty: 'Paste your token into the field.',
      invalid: 'This does not look like a token: it is Latin letters, digits and signs, at most 4096 characters.',
      rejected: "The university did not accept this token. Check that you copied all of it and that it hasn't expired.",
      universityMessage: "The university's answer:",
      limited: (seconds: number) => `Too many sign-in attempts. Try again in ${seconds} s.`,
      busy: (seconds: number) => `The university is overloaded with requests right now. Try again in ${seconds} s.`,
      unavailable: 'The university is not answering right now, so the token could not be checked. Try again later.',
    },
  },
});

/** A group found by name. */
export interface GroupResult {
  id: number;
  name: string;
}

/** A teacher found by the university's search. */
export interface TeacherResult {
  id: number;
  /** Surname, first name, patronymic. */
  fullName: string;
  /** Post and subdivision, to tell namesakes apart (empty when the university gives neither). */
  detail: string;
}

/** What a search found, or why it did not search. */
export type SearchOutcome =
  | { kind: 'too-short'; min: number }
  | { kind: 'too-long'; max: number }
  | {
      kind: 'results';
      groups: GroupResult[];
      /** How many groups matched in all (more than shown: the page asks to refine). */
      groupTotal: number;
      /** Undefined when the teacher search was not asked (a query without letters) or failed (see `teacherNote`). */
      teachers: TeacherResult[] | undefined;
      teacherNote?: { kind: 'unavailable' } | { kind: 'limited'; seconds: number } | undefined;
    };

/** Why the sign-in form is shown again. */
export type SignInError =
  | { kind: 'empty' }
  | { kind: 'invalid' }
  | { kind: 'rejected'; universityMessage?: string | undefined }
  | { kind: 'limited'; seconds: number }
  | { kind: 'busy'; seconds: number }
  | { kind: 'unavailable' };

export interface HomeView {
  lang: Lang;
  url: string;
  /** The search text as typed (shown back in the box). */
  query?: string | undefined;
  search?: SearchOutcome | undefined;
  signIn: {
    /** False without a SECRET_KEY: the form is replaced by a note. */
    available: boolean;
    /** This browser holds a personal session already. */
    signedIn?: boolean | undefined;
    error?: SignInError | undefined;
  };
  /** `?done=` after a personal action that ends here (deleted, signed out): its message on top. */
  done?: unknown;
}

export function homePage(view: HomeView): string {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: view.query ? `${view.query} · ${w.title}` : w.title,
    body: html`!${personalNotice(view.lang, view.done)}<h1>${w.title}</h1>
<p class="muted">${w.lead}</p>
<form class="search" method="get" action="/" role="search">
<label for="q" class="visually-hidden">${w.search}</label>
<input type="search" id="q" name="q" value="${view.query ?? ''}" placeholder="${w.placeholder}" autocomplete="off" maxlength="64"!${view.search ? html` aria-describedby="search-results"` : ''}>
<button type="submit">${w.find}</button>
</form>
!${view.search ? searchSection(view.lang, view.search) : ''}
!${signInSection(view.lang, view.signIn)}`,
  });
}

function searchSection(lang: Lang, search: SearchOutcome): Html {
  const w = words(lang);
  if (search.kind === 'too-short')
    return html`<p id="search-results" class="notice" role="status">${w.tooShort(search.min)}</p>`;
  if (search.kind === 'too-long')
    return html`<p id="search-results" class="notice" role="status">${w.tooLong(search.max)}</p>`;
  const { groups, teachers, teacherNote } = search;
  const noteText =
    teacherNote === undefined
      ? undefined
      : teacherNote.kind === 'limited'
        ? w.teachersLimited(teacherNote.seconds)
        : w.teachersUnavailable;
  const nothing = groups.length === 0 && (teachers ?? []).length === 0 && noteText === undefined;
  return html`<section id="search-results" aria-labelledby="results-title">
<h2 id="results-title" class="visually-hidden">${w.results}</h2>
!${nothing ? html`<p class="notice" role="status">${w.nothing}</p>` : ''}
!${noteText === undefined ? '' : html`<p class="notice" role="status">${noteText}</p>`}
!${nothing ? '' : groupList(lang, groups, search.groupTotal)}
!${nothing || teachers === undefined ? '' : teacherList(lang, teachers)}
</section>`;
}

function groupList(lang: Lang, groups: readonly GroupResult[], total: number): Html {
  const w = words(lang);
  if (groups.length === 0) return html`<h2>${w.groups}</h2><p class="muted">${w.noGroups}</p>`;
  return html`<h2>${w.groups}</h2>
<ul class="results" aria-label="${w.groups}">
!${groups.map((group) => html`<li><a href="/timetables/groups/${group.id}">${group.name}</a></li>`)}
</ul>
!${total > groups.length ? html`<p class="muted">${w.more(groups.length, total)}</p>` : ''}`;
}

function teacherList(lang: Lang, teachers: readonly TeacherResult[]): Html {
  const w = words(lang);
  if (teachers.length === 0) return html`<h2>${w.teachers}</h2><p class="muted">${w.noTeachers}</p>`;
  return html`<h2>${w.teachers}</h2>
<ul class="results" aria-label="${w.teachers}">
!${teachers.map(
    (teacher) =>
      html`<li><a href="/timetables/employees/${teacher.id}">${teacher.fullName}!${
        teacher.detail === '' ? '' : html`<br><small class="muted">${teacher.detail}</small>`
      }</a></li>`,
  )}
</ul>`;
}

function signInSection(lang: Lang, signIn: HomeView['signIn']): Html {
  const w = words(lang);
  const body = !signIn.available
    ? html`<p class="notice">${w.personalOff}</p>`
    : html`!${signIn.signedIn ? html`<p>${w.signedIn} <a href="/timetables/personal">${w.openPersonal}</a></p>` : ''}
<form method="post" action="/timetables/personal" class="sign-in">
<div class="field">
<label for="credential">${w.credential}</label>
<input type="password" id="credential" name="credential" required maxlength="4096" autocomplete="off" spellcheck="false" aria-describedby="credential-help!${signIn.error ? ' credential-error' : ''}"!${signIn.error ? html` aria-invalid="true" autofocus` : ''}>
<p id="credential-help" class="muted">${w.credentialHelp}</p>
</div>
!${signIn.error ? errorText(lang, signIn.error) : ''}
<button type="submit">${w.signIn}</button>
</form>`;
  return html`<section class="card" aria-labelledby="personal-title">
<h2 id="personal-title">${w.personal}</h2>
<p>${w.personalLead}</p>
!${body}
</section>`;
}

function errorText(lang: Lang, error: SignInError): Html {
  const e = words(lang).errors;
  const text =
    error.kind === 'limited' ? e.limited(error.seconds) : error.kind === 'busy' ? e.busy(error.seconds) : e[error.kind];
  const upstream =
    error.kind === 'rejected' && error.universityMessage
      ? html` ${e.universityMessage} «${error.universityMessage}»`
      : '';
  return html`<p id="credential-error" class="notice error" role="alert">${text}!${upstream}</p>`;
}
