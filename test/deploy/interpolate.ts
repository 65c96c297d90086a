/**
 * Compose's variable interpolation, as far as docker-compose.yml uses it: `${VAR}`, `${VAR:-default}`,
 * `${VAR-default}`, `${VAR:?error}`, `${VAR?error}` (defaults may nest) and `$$` for a literal `$`.
 */
export function interpolate(value: string, env: Record<string, string | undefined>): string {
  let out = '';
  let i = 0;
  while (i < value.length) {
    if (value.startsWith('$$', i)) {
      out += '$';
      i += 2;
    } else if (value.startsWith('${', i)) {
      const end = closingBrace(value, i + 2);
      out += expand(value.slice(i + 2, end), env);
      i = end + 1;
    } else {
      out += value[i];
      i += 1;
    }
  }
  return out;
}

function expand(body: string, env: Record<string, string | undefined>): string {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([\s\S]*))?$/.exec(body);
  if (!match) throw new Error(`invalid interpolation: \${${body}}`);
  const [, name = '', colon, operator, rest = ''] = match;
  const current = env[name];
  const missing = current === undefined || (colon === ':' && current === '');
  if (!missing || operator === undefined) return current ?? '';
  if (operator === '?') throw new Error(`required variable ${name} is missing a value: ${rest}`);
  return interpolate(rest, env);
}

function closingBrace(value: string, from: number): number {
  let depth = 1;
  for (let i = from; i < value.length; i += 1) {
    if (value[i] === '{') depth += 1;
    if (value[i] === '}') depth -= 1;
    if (depth === 0) return i;
  }
  throw new Error(`unclosed interpolation in ${value}`);
}
