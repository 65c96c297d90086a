/**
 * What feed serving asks of the per-client limits (http/client-limits.ts) before work that costs the university
 * a call or this process a render: admit the request or refuse it (RateLimitedError), and give the tokens back
 * when it cost nothing after all.
 */

/** How one request is admitted. */
export interface AdmitOptions {
  /**
   * False for a request about something nobody vouches for (a first request for an id that is in no directory):
   * it may not take the last half of the overall limit, so that requests for likely real ones find it there.
   * Default true.
   */
  likelyReal?: boolean;
}

/** The tokens one admitted request took; {@link refund} gives them back when it turned out to cost nothing. */
export interface Admission {
  refund(): Promise<void>;
}

/** The limits feed serving is admitted by: a first request for a timetable, a new feed variant. */
export interface FeedAdmissions {
  admit(action: 'first-request' | 'variant-render', ip: string, options?: AdmitOptions): Promise<Admission>;
}
