import type { Domain } from './institutes.ts';

/** The four kinds of classes the university sends, exactly as spelled on the wire. */
export const KIND = {
  lecture: 'лекция',
  practice: 'практика',
  lab: 'лабораторная работа',
  seminar: 'семинар',
} as const;

/** One of the {@link KIND} values. */
export type Kind = (typeof KIND)[keyof typeof KIND];

/** A time slot of the university's bell schedule; `id` is `time_interval_id`. */
export interface TimeSlot {
  id: number;
  begin: string;
  end: string;
}

/** The bell schedule: seven 90-minute pairs. */
export const TIME_SLOTS: readonly TimeSlot[] = [
  { id: 1, begin: '08:30', end: '10:00' },
  { id: 2, begin: '10:10', end: '11:40' },
  { id: 3, begin: '11:50', end: '13:20' },
  { id: 4, begin: '14:00', end: '15:30' },
  { id: 5, begin: '15:40', end: '17:10' },
  { id: 6, begin: '17:20', end: '18:50' },
  { id: 7, begin: '19:00', end: '20:30' },
];

/** A teaching building; rooms are numbered floor-first ("305", "1108а"). */
export interface Building {
  id: number;
  name: string;
  floors: number;
}

/** All buildings; institutes reference them by id. */
export const BUILDINGS: readonly Building[] = [
  { id: 2, name: 'Главное здание', floors: 4 },
  { id: 5, name: 'Физический корпус', floors: 6 },
  { id: 7, name: 'Химический корпус', floors: 5 },
  { id: 11, name: 'Учебное здание № 3 (геологический корпус)', floors: 4 },
  { id: 14, name: 'Учебное здание № 14', floors: 12 },
  { id: 17, name: 'Учебно-лабораторный корпус медицины и биологии', floors: 5 },
  { id: 23, name: 'Учебное здание № 2', floors: 10 },
  { id: 28, name: 'Учебное здание № 14 (корпус ВМК)', floors: 14 },
  { id: 31, name: 'Учебное здание № 7', floors: 4 },
  { id: 40, name: 'Учебное здание № 1 (психолого-педагогический корпус)', floors: 5 },
  { id: 45, name: 'Учебное здание № 12 (экономический корпус)', floors: 7 },
  { id: 52, name: 'Учебное здание № 19 (IT-парк)', floors: 9 },
  { id: 58, name: 'Инженерный корпус', floors: 6 },
  { id: 63, name: 'Спортивный комплекс', floors: 2 },
];

/** Id of the building where physical education takes place. */
export const SPORTS_BUILDING_ID = 63;

// Subjects by domain. Every institute also teaches COMMON_SUBJECTS.
const DOMAIN_SUBJECTS: Readonly<Record<Domain, readonly string[]>> = {
  cs: [
    'Программирование',
    'Алгоритмы и структуры данных',
    'Базы данных',
    'Операционные системы',
    'Компьютерные сети',
    'Дискретная математика',
    'Математический анализ',
    'Линейная алгебра и аналитическая геометрия',
    'Теория вероятностей и математическая статистика',
    'Архитектура вычислительных систем',
    'Машинное обучение',
    'Объектно-ориентированное программирование',
    'Веб-программирование',
    'Численные методы',
    'Информационная безопасность',
    'Теория формальных языков и трансляций',
  ],
  math: [
    'Математический анализ',
    'Алгебра',
    'Аналитическая геометрия',
    'Дифференциальные уравнения',
    'Функциональный анализ',
    'Комплексный анализ',
    'Уравнения математической физики',
    'Теоретическая механика',
    'Топология',
    'Теория вероятностей и математическая статистика',
    'Численные методы',
    'Программирование',
  ],
  physics: [
    'Механика',
    'Молекулярная физика',
    'Электричество и магнетизм',
    'Оптика',
    'Атомная физика',
    'Квантовая механика',
    'Термодинамика и статистическая физика',
    'Электродинамика',
    'Математический анализ',
    'Линейная алгебра и аналитическая геометрия',
    'Физика твёрдого тела',
    'Радиоэлектроника',
  ],
  chem: [
    'Общая и неорганическая химия',
    'Органическая химия',
    'Аналитическая химия',
    'Физическая химия',
    'Коллоидная химия',
    'Химическая технология',
    'Высокомолекулярные соединения',
    'Кристаллохимия',
    'Математический анализ',
    'Общая физика',
  ],
  bio: [
    'Ботаника',
    'Зоология',
    'Биохимия',
    'Генетика',
    'Микробиология',
    'Физиология человека и животных',
    'Анатомия человека',
    'Гистология',
    'Молекулярная биология',
    'Общая экология',
  ],
  geo: [
    'Общая геология',
    'Минералогия',
    'Петрография',
    'Геофизика',
    'Геология нефти и газа',
    'Картография',
    'Гидрология',
    'Геоинформационные системы',
    'Климатология',
    'Почвоведение',
  ],
  law: [
    'Теория государства и права',
    'Конституционное право',
    'Гражданское право',
    'Уголовное право',
    'Административное право',
    'Гражданский процесс',
    'Уголовный процесс',
    'Римское право',
    'Трудовое право',
    'Международное публичное право',
  ],
  philology: [
    'Введение в языкознание',
    'Теория литературы',
    'История русской литературы',
    'Современный русский язык',
    'Практический курс английского языка',
    'Стилистика',
    'Древнерусская литература',
    'Латинский язык',
    'Теория перевода',
  ],
  history: [
    'История древнего мира',
    'История средних веков',
    'Источниковедение',
    'Археология',
    'Новая и новейшая история',
    'Теория международных отношений',
    'Мировая политика',
    'История дипломатии',
    'Историография',
  ],
  econ: [
    'Микроэкономика',
    'Макроэкономика',
    'Бухгалтерский учёт',
    'Финансы',
    'Менеджмент',
    'Маркетинг',
    'Эконометрика',
    'Статистика',
    'Деньги, кредит, банки',
    'Налоги и налогообложение',
    'Корпоративные финансы',
  ],
  social: [
    'Общая психология',
    'Социальная психология',
    'Педагогика',
    'Возрастная психология',
    'Социология',
    'Политология',
    'Основы журналистики',
    'Психодиагностика',
    'Методы социологических исследований',
  ],
  sport: [
    'Теория и методика физической культуры',
    'Биомеханика двигательной деятельности',
    'Спортивная медицина',
    'Лёгкая атлетика',
    'Плавание',
    'Гимнастика',
    'Спортивные игры',
    'Физиология спорта',
  ],
  eng: [
    'Инженерная графика',
    'Сопротивление материалов',
    'Теоретическая механика',
    'Электротехника',
    'Материаловедение',
    'Метрология, стандартизация и сертификация',
    'Теория автоматического управления',
    'Робототехнические системы',
    'Детали машин',
    'Общая физика',
  ],
};

/** Subjects every group takes, whatever the institute. */
export const COMMON_SUBJECTS: readonly string[] = [
  'Философия',
  'История России',
  'Безопасность жизнедеятельности',
  'Русский язык и культура речи',
  'Основы российской государственности',
  'Правоведение',
  'Экономическая культура и финансовая грамотность',
];

/** Subjects taught only as practical classes, in subgroups (no lecture). */
export const PRACTICE_ONLY_SUBJECTS: readonly string[] = ['Иностранный язык', 'Физическая культура и спорт'];

/** Domains whose subject classes are seminars rather than practices. */
export const SEMINAR_DOMAINS: ReadonlySet<Domain> = new Set(['law', 'philology', 'history', 'econ', 'social']);

/** Domains that run laboratory work. */
export const LAB_DOMAINS: ReadonlySet<Domain> = new Set(['cs', 'physics', 'chem', 'bio', 'geo', 'eng']);

/** The subjects of a domain. */
export function domainSubjects(domain: Domain): readonly string[] {
  return DOMAIN_SUBJECTS[domain];
}

/** Every subject name once, sorted: the index gives each subject a stable id. */
export const ALL_SUBJECTS: readonly string[] = [
  ...new Set([...Object.values(DOMAIN_SUBJECTS).flat(), ...COMMON_SUBJECTS, ...PRACTICE_ONLY_SUBJECTS]),
].sort();

const SUBJECT_IDS = new Map(ALL_SUBJECTS.map((name, index) => [name, 3100 + index * 7]));

/** The stable `subject_id` of a subject name. */
export function subjectId(name: string): number {
  return SUBJECT_IDS.get(name) ?? 3000;
}

/** Teaching posts with relative weights. */
export const TEACHER_POSTS: readonly (readonly [string, number])[] = [
  ['ассистент', 14],
  ['старший преподаватель', 30],
  ['доцент', 36],
  ['профессор', 13],
  ['заведующий кафедрой', 5],
];

/** Posts of staff who do not teach. */
export const STAFF_POSTS: readonly string[] = [
  'инженер',
  'ведущий инженер',
  'специалист по учебно-методической работе',
  'лаборант',
  'документовед',
  'программист',
];
