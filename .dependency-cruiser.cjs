/**
 * The import rules of src/ and of the code around it, checked by `npm run deps` (and so by `npm test`). Type-only
 * imports count as dependencies too: `import type` is erased when the code runs, but a layer that names a type
 * of a layer above depends on it all the same. So types live where their owner is (a store persists types of its
 * own layer or below), and each stage names the narrow interface of what it takes: only runtime/ knows the whole
 * service context.
 *
 * Around src/: test/ (the suites) and bench/ (the benchmarks and their own tests) never import each other, type
 * imports included; what both use (process plumbing, the fake Google, polling) lives in testkit/, which imports
 * neither, and src/ imports none of them.
 *
 * The folders of src/ form a stack, bottom first. A folder may import its own layer and the layers below it,
 * never one above: so no folder imports a folder that imports it back. A new folder goes into LAYERS, or
 * `npm run deps` says it has no place.
 */

/** Bottom first. Each entry is a folder of src/ (or a file at its root) and the layer it sits in. */
const LAYERS = [
  ['lib', 'logger.ts', 'security'], // helpers that know nothing of timetables; the secret box; the logger factory
  ['upstream', 'simulator'], // the university API client and its fake
  ['timetable'], // dates, week parity, expansion, event identity, sources (pure)
  ['config.ts'], // one typed configuration from one table of settings
  ['store'], // every Redis store, keys.ts, and their .lua scripts
  ['feeds'], // ICS rendering and the publication diff (pure)
  ['push'], // the push core of every calendar kind: the diff, desired events, the lane pool, refusals (no kind's API)
  ['google', 'caldav', 'notify'], // push to Google and CalDAV; tell of changes (Telegram, webhooks)
  ['jobs'], // the job contract, one file per job, one failure policy
  ['subscriptions'], // the use cases people start: sign-up, credentials, connecting Google
  ['serving'], // feed cache, forms, variants, the fast path
  ['web'], // the pages people read: templates, their words in two languages, stylesheet and script
  ['http'], // routes, parsing, the error catalog, the server
  ['runtime'], // composition root, roles, commands
  ['cli.ts'], // the command line
];

const pathOf = (name) => (name.endsWith('.ts') ? `^src/${name.replace('.', '\\.')}$` : `^src/${name}/`);
const anyOf = (names) => names.map(pathOf).join('|');

const upwards = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${index}-imports-up`,
  comment: `${layer.join(', ')} may import only ${LAYERS.slice(0, index + 1)
    .flat()
    .join(', ')}`,
  severity: 'error',
  from: { path: anyOf(layer) },
  to: { path: anyOf(LAYERS.slice(index + 1).flat()) },
}));

module.exports = {
  forbidden: [
    ...upwards,
    {
      name: 'no-cycle',
      comment: 'modules that import each other, type-only imports included',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'folder-without-a-layer',
      comment: 'every folder of src/ has a place in LAYERS (.dependency-cruiser.cjs)',
      severity: 'error',
      from: { path: '^src/', pathNot: anyOf(LAYERS.flat()) },
      to: {},
    },
    {
      name: 'src-imports-tests',
      comment: 'the service never imports test, bench, testkit or script code',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|testkit|scripts)/' },
    },
    {
      name: 'test-imports-bench',
      comment: 'tests never import the benchmarks: what both use lives in testkit/',
      severity: 'error',
      from: { path: '^test/' },
      to: { path: '^bench/' },
    },
    {
      name: 'bench-imports-test',
      comment: 'the benchmarks (and their own tests) never import test/: what both use lives in testkit/',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/' },
    },
    {
      name: 'testkit-imports-users',
      comment: 'testkit/ serves test/, bench/ and scripts/ and imports none of them',
      severity: 'error',
      from: { path: '^testkit/' },
      to: { path: '^(test|bench|scripts)/' },
    },
  ],
  options: {
    // TypeScript 7 ships no compiler API for dependency-cruiser to parse with; swc's parser reads our .ts
    // files and marks `import type` (and imports whose specifiers are all `type`) as type-only, which the
    // context-at-run-time rule tells apart. `tsPreCompilationDeps` is left out: it only steers the TypeScript compiler's
    // extraction, which never runs here, and asking for it made every run warn "missing-tsc-transpiler".
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/.*\\.test\\.ts$' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
