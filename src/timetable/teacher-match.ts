/**
 * Finding a teacher by what a person types: the university's own search compares text strictly (`Киселева`
 * does not find `Киселёва`, `Киселёва С.Г.` finds nobody), so the service matches names it knows itself.
 *
 * Names and queries are compared folded ({@link foldName}): case, `ё`/`е` and runs of spaces do not matter.
 * A query is read as words (dots and commas separate them, so `С.Г.` is two initials):
 * - one word: a surname or its beginning (`Кисел`, `киселева`);
 * - several words: a surname (or its beginning) first or last, and the others the first name and patronymic in
 *   that order, each whole or its beginning (an initial is a beginning): `Киселёва С.Г.`, `Киселёва С. Г.`,
 *   `Киселёва С Г`, `С.Г. Киселёва`, `Киселёва Софья`, `Киселёва Софья Геннадьевна`; two initials written
 *   together (`Киселёва СГ`) are read as two.
 * An exact surname ranks before a surname that only begins with the query; then teachers before other staff,
 * then by name.
 */

/** A person's name as the university gives it. */
export interface PersonName {
  readonly id: number;
  readonly lastName: string;
  readonly firstName: string;
  readonly middleName: string;
  /** False for staff who do not teach (the search knows); people seen in timetables teach. */
  readonly teacher?: boolean;
}

/** Lower case, `ё` as `е`, canonical Unicode, trimmed, runs of whitespace as one space. */
export function foldName(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').trim().replace(/\s+/g, ' ');
}

/** The words of a query, folded: anything but letters, digits, hyphens and apostrophes separates them. */
export function queryWords(query: string): string[] {
  return foldName(query)
    .split(/[^\p{L}\p{N}'’-]+/u)
    .filter((word) => word !== '' && /[\p{L}\p{N}]/u.test(word));
}

/** A person with folded names, ready to be matched many times. */
export interface IndexedPerson<T extends PersonName> {
  readonly person: T;
  readonly last: string;
  readonly first: string;
  readonly middle: string;
}

const COLLATOR = new Intl.Collator('ru', { sensitivity: 'base' });

/** People with their folded names, in the order results are listed within a rank (teachers first, by name). */
export function indexPeople<T extends PersonName>(people: Iterable<T>): IndexedPerson<T>[] {
  return [...people]
    .map((person) => ({
      person,
      last: foldName(person.lastName),
      first: foldName(person.firstName),
      middle: foldName(person.middleName),
    }))
    .sort(
      (a, b) =>
        Number(b.person.teacher !== false) - Number(a.person.teacher !== false) ||
        COLLATOR.compare(a.person.lastName, b.person.lastName) ||
        COLLATOR.compare(a.person.firstName, b.person.firstName) ||
        COLLATOR.compare(a.person.middleName, b.person.middleName) ||
        a.person.id - b.person.id,
    );
}

/** Exact surname. */
const EXACT = 0;
/** The surname begins with the query's. */
const PREFIX = 1;

/**
 * How well `person` answers a query of `words` ({@link queryWords}): {@link EXACT}, {@link PREFIX}, or
 * undefined when it does not.
 */
export function matchRank(
  person: Omit<IndexedPerson<PersonName>, 'person'>,
  words: readonly string[],
): number | undefined {
  const [head, ...rest] = words;
  if (head === undefined || person.last === '') return undefined;
  if (rest.length === 0) return surnameRank(person.last, head);
  let best: number | undefined;
  // The surname first, the given names after it; or the given names first and the surname last.
  const tail = rest.at(-1) as string;
  for (const [surname, given] of [
    [head, rest],
    [tail, words.slice(0, -1)],
  ] as const) {
    const rank = surnameRank(person.last, surname);
    if (rank === undefined || (best !== undefined && rank >= best)) continue;
    if (givenNamesMatch(person, given)) best = rank;
  }
  return best;
}

function surnameRank(last: string, word: string): number | undefined {
  if (last === word) return EXACT;
  return last.startsWith(word) ? PREFIX : undefined;
}

/** Whether `given` are the first name and patronymic (each whole or its beginning), or two initials in one word. */
function givenNamesMatch(person: { first: string; middle: string }, given: readonly string[]): boolean {
  const [first, middle, ...more] = given;
  if (first === undefined || more.length > 0) return false;
  if (person.first.startsWith(first) && (middle === undefined || person.middle.startsWith(middle))) return true;
  // `СГ`: both initials written together.
  const letters = [...first];
  return (
    middle === undefined &&
    letters.length === 2 &&
    person.first.startsWith(letters[0] as string) &&
    person.middle.startsWith(letters[1] as string)
  );
}

/**
 * The people of `index` that `query` names, best first (exact surnames, then surnames that begin with it; the
 * index's order within each), at most `limit`.
 */
export function matchPeople<T extends PersonName>(
  index: readonly IndexedPerson<T>[],
  query: string,
  limit: number,
): T[] {
  const words = queryWords(query);
  if (words.length === 0 || words.length > 3) return [];
  const ranks: [T[], T[]] = [[], []];
  for (const entry of index) {
    const rank = matchRank(entry, words);
    if (rank === undefined) continue;
    const list = ranks[rank] as T[];
    if (list.length < limit) list.push(entry.person);
    if (ranks[EXACT].length >= limit) break;
  }
  return ranks.flat().slice(0, limit);
}
