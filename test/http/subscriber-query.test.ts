/** The option fields of a page query or form post, and the typed refusals of bad ones, worded for each use. */
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { filledOptionFields, parseSubscriberQuery, readSubscriberOptions } from '../../src/http/subscriber-query.ts';
import { OptionRefusedError } from '../../src/serving/errors.ts';
import { optionsMisfits } from '../../src/serving/variant-render.ts';

describe('filledOptionFields', () => {
  it('drops empty fields and empty values of repeated ones, and fields that are no option', () => {
    const fields = filledOptionFields({
      subgroup: '',
      alarm: ' ',
      title: '{subject}',
      exclude: ['лекция', '', 'семинар'],
      lang: 'en',
      done: undefined,
    });
    expect(fields).toEqual({ title: '{subject}', exclude: ['лекция', 'семинар'] });
    expect(filledOptionFields({ exclude: ['', 'лекция'], subgroup: ['2'] })).toEqual({
      exclude: 'лекция',
      subgroup: '2',
    });
    expect(parseSubscriberQuery(filledOptionFields({ subgroup: '', alarm: '15' })).options).toEqual({
      alarmMinutes: 15,
    });
  });

  it('drops a title that is the default, by its English or Russian names', () => {
    expect(filledOptionFields({ title: '{subject} ({kind})', alarm: '5' })).toEqual({ alarm: '5' });
    expect(filledOptionFields({ title: '{предмет} ({вид})' })).toEqual({});
    expect(filledOptionFields({ title: '{предмет} ({kind}) ' })).toEqual({ title: '{предмет} ({kind}) ' });
  });
});

describe('subscriber options refused', () => {
  it('names the field and says, in Russian and English, what is wrong and what to do', () => {
    const { options, refused } = readSubscriberOptions({ title: '{predmet}', alarm: '30', subgroup: '2' });
    expect(options).toEqual({ alarmMinutes: 30, subgroup: 2 });
    expect(refused).toHaveLength(1);
    const [error] = refused;
    expect(error).toBeInstanceOf(OptionRefusedError);
    expect(error?.field).toBe('title');
    expect(error?.fieldWords).toEqual({
      ru: 'Неизвестная подстановка {predmet}. Можно использовать: {предмет} {вид} {аудитория} {корпус} {преподаватель} {группы} {примечание}.',
      en: 'Unknown placeholder {predmet}. You can use: {subject} {kind} {room} {building} {teacher} {groups} {note}.',
    });
    // A feed URL's answer still names the query parameter, with the same code and status as before.
    const answer = toHttpError(error as OptionRefusedError);
    expect(answer).toMatchObject({ statusCode: 400, code: 'INVALID_QUERY' });
    expect(answer?.words.en).toBe(
      'query parameter title: unknown placeholder "{predmet}"; the placeholders are {subject}, {kind}, {room}, {building}, {teacher}, {groups}, {note}',
    );
    expect(answer?.words.ru).toMatch(
      /^параметр запроса title: неизвестная подстановка "\{predmet\}"; подстановки: \{предмет\}/,
    );
    expect(() => parseSubscriberQuery({ title: '{predmet}' })).toThrow(OptionRefusedError);
  });

  it('refuses every bad field at once, in the order a feed URL reports the first', () => {
    const { options, refused } = readSubscriberOptions({
      exclude: 'x'.repeat(65),
      title: 'a\nb',
      alarm: ['5', '10'],
      subgroup: '0',
    });
    expect(options).toEqual({});
    expect(refused.map((error) => error.field)).toEqual(['subgroup', 'alarm', 'title', 'exclude']);
    expect(refused.map((error) => error.fieldWords.ru)).toEqual([
      'Подгруппа — номер от 1 до 99, а не «0»: выберите её из списка.',
      'Указано 2 значения: оставьте одно.',
      'В названии есть перевод строки или другой управляющий символ: оставьте его одной строкой.',
      `«${'x'.repeat(37)}...» — не вид занятий (вид не длиннее 64 символов): отметьте виды из списка.`,
    ]);
    expect(() => parseSubscriberQuery({ alarm: ['5', '10'], subgroup: '0' })).toThrow(
      'query parameter subgroup must be a whole number from 1 to 99, got "0"',
    );
  });

  it('stores Russian placeholders by their English names: one canonical text, one feed variant', () => {
    const russian = parseSubscriberQuery({ title: '{вид}: {предмет}', alarm: '10' });
    const english = parseSubscriberQuery({ title: '{kind}: {subject}', alarm: '10' });
    expect(russian).toEqual(english);
    expect(russian.options.titleTemplate).toBe('{kind}: {subject}');
    expect(() => parseSubscriberQuery({ title: '{предмт}' })).toThrow(/unknown placeholder "\{предмт\}"/);
  });

  it('refuses an unclosed placeholder and a stray brace, saying how to write the title', () => {
    const unclosed = readSubscriberOptions({ title: '{предмет', alarm: '15' });
    expect(unclosed.options).toEqual({ alarmMinutes: 15 });
    expect(unclosed.refused.map((error) => [error.field, error.fieldWords])).toEqual([
      [
        'title',
        {
          ru: 'Подстановка «{предмет» не закрыта: допишите «}», чтобы получилось {предмет}.',
          en: 'The placeholder {предмет is not closed: add "}" to make it {предмет}.',
        },
      ],
    ]);
    expect(() => parseSubscriberQuery({ title: '{предмет' })).toThrow(
      'query parameter title: placeholder "{предмет" is not closed; write "{предмет}"',
    );
    expect(readSubscriberOptions({ title: '{subject} ({kind}' }).refused).toEqual([]);
    const refusedRu = (title: string) => readSubscriberOptions({ title }).refused.map((error) => error.fieldWords.ru);
    expect(refusedRu('{вид}: {предмет')).toEqual([
      'Подстановка «{предмет» не закрыта: допишите «}», чтобы получилось {предмет}.',
    ]);
    expect(refusedRu('{прдмет')[0]).toMatch(
      /^Подстановка «\{прдмет» не закрыта, и такой подстановки нет\. Можно использовать: \{предмет\}/,
    );
    const stray = (brace: string) =>
      `В названии лишняя скобка «${brace}»: фигурные скобки ставятся только вокруг подстановки, например {предмет}. Уберите её или замените круглой.`;
    expect(refusedRu('{предмет}}')).toEqual([stray('}')]);
    expect(refusedRu('} {предмет}')).toEqual([stray('}')]);
    expect(refusedRu('{{предмет}}')).toEqual([stray('{')]);
    expect(refusedRu('{ предмет }')).toEqual([stray('{')]);
    expect(refusedRu('{}')).toEqual([stray('{')]);
    // A brace inside another placeholder's braces does not join the text around it into a placeholder.
    expect(refusedRu('{пред{вид}мет}')[0]).toMatch(/^Подстановка «\{пред» не закрыта, и такой подстановки нет/);
    expect(() => parseSubscriberQuery({ title: 'a } b' })).toThrow(
      'query parameter title: stray "}"; braces go only around a placeholder, such as {subject}',
    );
    // A well-formed name that is no placeholder is still refused as unknown.
    expect(refusedRu('{Привет}')[0]).toMatch(/^Неизвестная подстановка \{Привет\}/);
  });

  it('says which subgroup or kind the timetable lacks, beside its field', () => {
    const values = { subgroups: [1, 2], kinds: ['лекция', 'практика'] };
    const misfits = optionsMisfits(values, { subgroup: 3, excludeKinds: ['семинар', 'лекция'] });
    expect(misfits.map((error) => [error.field, error.fieldWords.ru])).toEqual([
      ['subgroup', 'В этом расписании нет подгруппы 3. Выберите одну из: 1, 2 — или «Все подгруппы».'],
      ['exclude', '«семинар» — не вид занятий этого расписания. Есть такие: лекция, практика.'],
    ]);
    expect(optionsMisfits({ subgroups: [], kinds: [] }, { subgroup: 1 })[0]?.fieldWords.en).toBe(
      'This timetable has no subgroup 1. It has no subgroups: choose "All subgroups".',
    );
    expect(optionsMisfits(values, { subgroup: 2, excludeKinds: ['Лекция'] })).toEqual([]);
  });
});
