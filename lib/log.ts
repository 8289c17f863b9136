// Structured logs: one JSON object per line on stdout, which is what CloudWatch Logs and the
// metric filters in infra/ read. Callers pass fields, never raw bodies or secrets.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

export type LogSink = (line: string) => void;

let sink: LogSink = (line) => process.stdout.write(`${line}\n`);

/** Redirects every logger's output (tests capture lines here; the local stack may silence them). */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

export function createLogger(
  component: string,
  level: LogLevel = (process.env.LOG_LEVEL as LogLevel) || 'info',
): Logger {
  const min = order[level] ?? order.info;
  const write = (lvl: LogLevel, event: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < min) return;
    const entry: Record<string, unknown> = { level: lvl, time: new Date().toISOString(), component, event };
    if (fields) {
      for (const [k, v] of Object.entries(fields)) {
        if (v !== undefined) entry[k] = v instanceof Error ? { name: v.name, message: v.message } : v;
      }
    }
    sink(JSON.stringify(entry));
  };
  return {
    debug: (e, f) => write('debug', e, f),
    info: (e, f) => write('info', e, f),
    warn: (e, f) => write('warn', e, f),
    error: (e, f) => write('error', e, f),
  };
}
