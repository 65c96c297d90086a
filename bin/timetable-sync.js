#!/usr/bin/env node
// Entry point for `npx timetable-sync`. The project runs its TypeScript sources directly on Node 24's
// built-in type stripping, so there is no build step between `npm ci` and a working command.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `timetable-sync needs Node 24 or newer; this is Node ${process.versions.node}.\n` +
      "Run it as `npx timetable-sync …` after `npm ci`: npm puts the project's own Node 24 first on PATH.\n",
  );
  process.exit(1);
}
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
