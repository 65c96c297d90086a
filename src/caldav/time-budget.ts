/**
 * A budget of time over many CalDAV requests: each request has its own deadline, but a server answering every
 * one just under it would still hold a push worker's slot, or a connect, for as long as it likes.
 */

/**
 * Runs `work` with a signal that aborts when `outer` does or once `ms` have passed, with `expired()` as its
 * reason; when the budget ran out and `work` failed, the failure is `expired()`'s error, whatever `work` made of
 * the abort. The timer is cleared when `work` ends: none outlives it.
 */
export async function withinBudget<T>(
  outer: AbortSignal | undefined,
  ms: number,
  expired: () => Error,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const budget = new AbortController();
  const timer = setTimeout(() => budget.abort(expired()), ms);
  const signal = outer === undefined ? budget.signal : AbortSignal.any([outer, budget.signal]);
  try {
    return await work(signal);
  } catch (error) {
    if (budget.signal.aborted && !outer?.aborted) throw budget.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
