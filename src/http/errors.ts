/** An error a route answers with a status and a JSON body `{ "error": message }`. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly statusCode: number;
  /** Extra response headers, e.g. `Retry-After` or `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(statusCode: number, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(message);
    this.statusCode = statusCode;
    this.headers = headers;
  }
}
