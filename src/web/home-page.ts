/**
 * `/`: find a group or a teacher by name (`/?q=…`, a link that can be shared), or sign in with a university
 * credential for a personal timetable. Groups come from the service's group directory, teachers from its
 * teacher directory or the university's search; a teacher search that failed leaves the group results and says
 * so. A miss speaks of a group or of a teacher, as the text looks like a group's number or a name.
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
    placeholder: (group: string | undefined) =>
      group === undefined ? 'Номер группы или фамилия преподавателя' : `Например, ${group} или Иванов`,
    find: 'Найти',
    results: 'Результаты поиска',
    groups: 'Группы',
    teachers: 'Преподаватели',
    noTeacher: (query: string) => `Преподаватель «${query}» не найден. Проверьте фамилию или введите только её начало.`,
    noGroup: (query: string, example: string | undefined) =>
      `Группа «${query}» не найдена. Проверьте номер${example === undefined ? '' : `: например, ${example}`}.`,
    more: (shown: number, total: number) => `Показаны ${shown} из ${total}. Уточните запрос, чтобы найти остальные.`,
    tooShort: (min: number) => `Введите хотя бы ${min} символа: номер группы или фамилию преподавателя.`,
    tooLong: (max: number) => `Запрос слишком длинный: не больше ${max} символов.`,
    teachersUnavailable: 'Поиск преподавателей сейчас не отвечает, попробуйте чуть позже. Группы найдены как обычно.',
    teachersLimited: (seconds: number) =>
      `Слишком много поисков преподавателей подряд. Попробуйте через ${seconds} с. Группы найдены как обычно.`,
    personal: 'Личное расписание',
    personalLead:
      'Войдите с токеном университета — и получите своё расписание (занятия вашей подгруппы, без занятий других подгрупп) и расписание своей группы.',
    credential: 'Токен университета',
    tokenWhere:
      'Токен выдаёт информационная система университета — та, куда вы входите со своим студенческим логином: найдите его там, в личном кабинете, и скопируйте целиком.',
    tokenHelpLink: 'Где найти токен',
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
    placeholder: (group: string | undefined) =>
      group === undefined ? "A group's number or a teacher's surname" : `For example ${group} or Ivanov`,
    find: 'Find',
    results: 'Search results',
    groups: 'Groups',
    teachers: 'Teachers',
    noTeacher: (query: string) => `No teacher “${query}” found. Check the surname, or type only its beginning.`,
    noGroup: (query: string, example: string | undefined) =>
      `No group “${query}” found. Check the number${example === undefined ? '' : `, for example ${example}`}.`,
    more: (shown: number, total: number) => `Showing ${shown} of ${total}. Refine the search to find the others.`,
    tooShort: (min: number) => `Type at least ${min} characters: a group's number or a teacher's surname.`,
    tooLong: (max: number) => `The search is too long: at most ${max} characters.`,
    teachersUnavailable: 'The teacher search is not answering right now; try again shortly. Groups are found as usual.',
    teachersLimited: (seconds: number) =>
      `Too many teacher searches in a row. Try again in ${seconds} s. Groups are found as usual.`,
    personal: 'Your personal timetable',
    personalLead:
      'Sign in with your university token to get your own timetable (the classes of your subgroup, not the other subgroups’) and your group’s.',
    credential: 'University token',
    tokenWhere:
      "The token comes from the university's information system, the one you sign in to with your student login: find it there, in your personal account, and copy all of it.",
    tokenHelpLink: 'Where to find the token',
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

/** A teacher found by the teacher search. */
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
      /** What the text looks like: a group's number (it has digits) or a person's name; a miss says so. */
      looksLike: 'group' | 'name';
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
  /** A group of this deployment's directory, the example in the box and the hints (none: a neutral hint). */
  exampleGroup?: string | undefined;
  /** UNIVERSITY_TOKEN_HELP_URL: where the university shows a student their token. */
  tokenHelpUrl?: string | undefined;
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
<input type="search" id="q" name="q" value="${view.query ?? ''}" placeholder="${w.placeholder(view.exampleGroup)}" autocomplete="off" maxlength="64"!${view.search ? html` aria-describedby="search-results"` : ''}>
<button type="submit">${w.find}</button>
</form>
!${view.search ? searchSection(view.lang, view.search, view.query ?? '', view.exampleGroup) : ''}
!${signInSection(view.lang, view.signIn, view.tokenHelpUrl)}`,
  });
}

function searchSection(lang: Lang, search: SearchOutcome, query: string, exampleGroup: string | undefined): Html {
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
  // A list is shown when it found someone; when neither did, one line says so in the terms of what was typed.
  const shown = query.trim().replace(/\s+/g, ' ');
  const nothing = groups.length === 0 && (teachers ?? []).length === 0 && noteText === undefined;
  const miss = search.looksLike === 'group' ? w.noGroup(shown, exampleGroup) : w.noTeacher(shown);
  return html`<section id="search-results" aria-labelledby="results-title">
<h2 id="results-title" class="visually-hidden">${w.results}</h2>
!${nothing ? html`<p class="notice" role="status" data-search-miss="${search.looksLike}">${miss}</p>` : ''}
!${noteText === undefined ? '' : html`<p class="notice" role="status">${noteText}</p>`}
!${groups.length === 0 ? '' : groupList(lang, groups, search.groupTotal)}
!${teachers === undefined || teachers.length === 0 ? '' : teacherList(lang, teachers)}
</section>`;
}

function groupList(lang: Lang, groups: readonly GroupResult[], total: number): Html {
  const w = words(lang);
  return html`<h2>${w.groups}</h2>
<ul class="results" aria-label="${w.groups}">
!${groups.map((group) => html`<li><a href="/timetables/groups/${group.id}">${group.name}</a></li>`)}
</ul>
!${total > groups.length ? html`<p class="muted">${w.more(groups.length, total)}</p>` : ''}`;
}

function teacherList(lang: Lang, teachers: readonly TeacherResult[]): Html {
  const w = words(lang);
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

function signInSection(lang: Lang, signIn: HomeView['signIn'], tokenHelpUrl: string | undefined): Html {
  const w = words(lang);
  const body = !signIn.available
    ? html`<p class="notice">${w.personalOff}</p>`
    : html`!${signIn.signedIn ? html`<p>${w.signedIn} <a href="/timetables/personal">${w.openPersonal}</a></p>` : ''}
<form method="post" action="/timetables/personal#sign-in" class="sign-in">
<div class="field">
<label for="credential">${w.credential}</label>
<input type="password" id="credential" name="credential" required maxlength="4096" autocomplete="off" spellcheck="false" aria-describedby="credential-where credential-help!${signIn.error ? ' credential-error' : ''}"!${signIn.error ? html` aria-invalid="true" autofocus` : ''}>
<p id="credential-where">${w.tokenWhere}!${
        tokenHelpUrl === undefined ? '' : html` <a href="${tokenHelpUrl}" rel="noopener">${w.tokenHelpLink}</a>`
      }</p>
<p id="credential-help" class="muted">${w.credentialHelp}</p>
</div>
!${signIn.error ? errorText(lang, signIn.error) : ''}
<button type="submit">${w.signIn}</button>
</form>`;
  // The form posts to this section's anchor: a refusal's page opens here, at the error, the field focused.
  return html`<section class="card" id="sign-in" aria-labelledby="personal-title">
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
