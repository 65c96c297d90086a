/**
 * The kinds of class (as the university names them, lower-case) that a short code can name by their place in
 * this list: a `/start` payload hides kinds as bits of it (store/telegram-payload.ts). Append only: a place never
 * changes its kind, so a code read later names the same kinds; a kind not here cannot be named so.
 */
export const KIND_CODES: readonly string[] = [
  'лекция',
  'практика',
  'лабораторная работа',
  'семинар',
  'практическое занятие',
  'семинарское занятие',
  'лаб. занятие',
  'консультация',
  'экзамен',
  'зачёт',
  'зачет',
  'дифференцированный зачёт',
  'курсовая работа',
  'контрольная работа',
];
