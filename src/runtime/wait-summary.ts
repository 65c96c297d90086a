/** The closing words of `resync --wait`: how the jobs ended, failures grouped by reason, time taken. */
import type { JobOutcomes } from '../jobs/job-watch.ts';
import { formatDuration, formatRate, pace } from './progress.ts';

/** Job ids shown per failure reason; the rest are counted. */
const IDS_SHOWN = 3;

/** The summary lines (without trailing line break); `stopped` when the operator stopped waiting. */
export function waitSummary(outcomes: JobOutcomes, elapsedMs: number, stopped: boolean): string {
  const failed = [...outcomes.failed.values()].reduce((sum, ids) => sum + ids.length, 0);
  const counts = { total: outcomes.total, done: outcomes.done, failed };
  const took = formatDuration(elapsedMs);
  const rate = formatRate(pace(counts, elapsedMs).perSecond);
  const lines = stopped
    ? [
        `Stopped waiting after ${took}: ${outcomes.done} done, ${failed} failed, ${outcomes.pending.size} still queued or running (not cancelled: the workers go on).`,
      ]
    : [`Finished in ${took}: ${outcomes.done} done, ${failed} failed, of ${outcomes.total} (${rate}).`];
  const reasons = [...outcomes.failed.entries()].sort((a, b) => b[1].length - a[1].length);
  if (reasons.length > 0) lines.push('Failed:');
  for (const [reason, ids] of reasons) {
    const more = ids.length > IDS_SHOWN ? ` and ${ids.length - IDS_SHOWN} more` : '';
    lines.push(`  ${ids.length} × ${oneLine(reason)}: ${ids.slice(0, IDS_SHOWN).join(', ')}${more}`);
  }
  return lines.join('\n');
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
