// Structured logs: one JSON object per line on stdout, which is what CloudWatch Logs and the metric filters
// in infra/ read. Every line carries the keys operators search by: `time`, `level`, `function` (ingest,
// worker, ...), `event`, and inside an invocation the Lambda request id (`awsRequestId`, the id of the
// START/REPORT lines) and whether it is the container's first (`coldStart`). `service` is left to the
// callers: on a callback's lines it is the callback's service (recording or screenshot). Callers pass
// fields, never raw bodies or secrets.
import { AsyncLocalStorage } from 'node:async_hooks';
import { errorSentence } from './text.ts';

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

/** Redirects every logger's output (tests capture lines here; the local stack may silence or reformat them). */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

/** Lambda's application log levels (AWS_LAMBDA_LOG_LEVEL) in the logger's terms. */
const lambdaLevels: Record<string, LogLevel> = {
  TRACE: 'debug',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
  FATAL: 'error',
};

/**
 * The level in force: the function's LoggingConfig application log level when one is set (Lambda passes it
 * as AWS_LAMBDA_LOG_LEVEL), else LOG_LEVEL (the stage parameter), else info.
 */
export function logLevelFrom(env: Readonly<Record<string, string | undefined>> = process.env): LogLevel {
  const lambda = lambdaLevels[env.AWS_LAMBDA_LOG_LEVEL?.trim().toUpperCase() ?? ''];
  if (lambda) return lambda;
  const own = env.LOG_LEVEL?.trim().toLowerCase() as LogLevel | undefined;
  return own && own in order ? own : 'info';
}

interface Invocation {
  awsRequestId: string | undefined;
  coldStart: boolean;
}

const invocation = new AsyncLocalStorage<Invocation>();

export type InvocationRunner = <T>(context: { awsRequestId?: string } | undefined, fn: () => T) => T;

/**
 * What a handler module creates once, at load (once per container): each call runs one invocation, whose
 * lines carry its Lambda request id and the cold-start flag, true for the first. One runner per module keeps
 * the flag right when several handlers share a process (the local stack); concurrent invocations keep
 * their own request ids apart.
 */
export function invocationRunner(): InvocationRunner {
  let count = 0;
  return (context, fn) => invocation.run({ awsRequestId: context?.awsRequestId, coldStart: count++ === 0 }, fn);
}

export function createLogger(fn: string, level: LogLevel = logLevelFrom()): Logger {
  const min = order[level] ?? order.info;
  const write = (lvl: LogLevel, event: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < min) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, function: fn, event };
    const current = invocation.getStore();
    if (current) {
      if (current.awsRequestId) entry.awsRequestId = current.awsRequestId;
      entry.coldStart = current.coldStart;
    }
    if (fields) {
      for (const [k, v] of Object.entries(fields)) {
        if (v !== undefined) entry[k] = v instanceof Error ? errorSentence(v) : v;
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

/**
 * `log`, with `fixed` on every line it writes (before the line's own fields, which win a clash): the keys of
 * one piece of work that each of its lines must name, such as the ingest's request id on the worker's lines
 * about a callback.
 */
export function withFields(log: Logger, fixed: Record<string, unknown>): Logger {
  const merged = (fields?: Record<string, unknown>) => ({ ...fixed, ...fields });
  return {
    debug: (e, f) => log.debug(e, merged(f)),
    info: (e, f) => log.info(e, merged(f)),
    warn: (e, f) => log.warn(e, merged(f)),
    error: (e, f) => log.error(e, merged(f)),
  };
}
