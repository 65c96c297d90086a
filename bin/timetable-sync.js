#!/usr/bin/env node
// Entry point for `npx timetable-sync`. The project runs its TypeScript sources directly on Node 24's
// built-in type stripping, so there is no build step between `npm ci` and a working command.
import { main } from '../src/cli.ts';

process.exitCode = await main(process.argv.slice(2));
