// What `callbacks dev` prints of the handlers' JSON log lines on a terminal: one readable line per callback
// (time, route, status, task, type, verdict, duration), and the warnings and errors of the worker and the
// poller in short; routine lines (a callback applied, a batch done) are left to the JSON format. The values
// come from callbacks anyone can send: each is made printable (cli/format.ts) before it is shown.
import { callbackTypeName, clockTime, colorStatus, printable, type Colors } from './format.ts';

export type LogFormat = 'pretty' | 'json';

/** The keys every line has; the others are shown as key=value on warnings and errors. */
const BASE_KEYS = new Set(['time', 'level', 'function', 'event', 'awsRequestId', 'coldStart']);

function statusText(status: unknown, c: Colors): string {
  const text = value(status ?? '-');
  if (typeof status !== 'number') return text;
  return status < 300 ? c.green(text) : status < 500 ? c.yellow(text) : c.red(text);
}

function value(v: unknown): string {
  return printable(typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));
}

/** The readable form of one JSON log line, or null when the line is not shown on a terminal. */
export function prettyLogLine(line: string, c: Colors): string | null {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return printable(line);
  }
  const at = Date.parse(String(entry.time));
  const time = c.dim(Number.isFinite(at) ? clockTime(at) : value(entry.time ?? ''));
  if (entry.event === 'callback_request') {
    const parts = [
      time,
      value(entry.route ?? '-').padEnd(27),
      statusText(entry.status, c),
      value(entry.id ?? '-').padEnd(20),
      typeof entry.type === 'number' ? callbackTypeName(entry.type) : '-',
      entry.verdict ? colorStatus(value(entry.verdict), c) : '-',
      typeof entry.latencyMs === 'number' ? `${entry.latencyMs} ms` : '-',
    ];
    if (entry.code) parts.push(c.yellow(value(entry.code)));
    if (entry.setAside) parts.push(c.yellow('set aside: callbacks quarantine apply recovers it'));
    if (entry.claim === 'replayed') parts.push(c.yellow('a replay: set aside as replayed_signature'));
    if (entry.reason) parts.push(c.dim(value(entry.reason)));
    return parts.join('  ');
  }
  if (entry.level !== 'warn' && entry.level !== 'error') return null;
  const level = entry.level === 'error' ? c.red('ERROR') : c.yellow('WARN ');
  const rest = Object.entries(entry)
    .filter(([k]) => !BASE_KEYS.has(k))
    .map(([k, v]) => `${k}=${value(v)}`)
    .join(' ');
  const what = `${value(entry.function ?? '')} ${value(entry.event ?? '')}`;
  return `${time}  ${level}  ${what}${rest ? `  ${c.dim(rest)}` : ''}`;
}
