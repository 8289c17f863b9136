// The one way a function reads its settings from the environment. Each function declares its variables in one
// schema (a record of variables, each with a valibot schema for its value, its default, and what a bad value
// does), and readEnvironment applies it: a bad value either stops the function with one sentence (a setting that
// is unsafe to run with) or falls back to the default with a warning. The tables of docs/configuration.md are
// held to these schemas (test/docs-tables.test.ts).
import * as v from 'valibot';
import { parseDuration } from '../time-point.ts';

/** The functions whose settings are read here; their names appear in the sentences of refusal. */
export type FunctionName = 'ingest' | 'worker' | 'api' | 'sweeper' | 'verifier';

const functionInWords: Record<FunctionName, string> = {
  ingest: 'the ingest',
  worker: 'the worker',
  api: 'the read API',
  sweeper: 'the sweeper',
  verifier: 'the verifier',
};
const errorNames: Record<FunctionName, string> = {
  ingest: 'IngestConfigError',
  worker: 'WorkerConfigError',
  api: 'ApiConfigError',
  sweeper: 'SweeperConfigError',
  verifier: 'VerifierConfigError',
};

/** A setting the function refuses to start with; the message is one sentence naming the variable. */
export class ConfigError extends Error {
  readonly functionName: FunctionName;
  constructor(functionName: FunctionName, message: string) {
    super(message);
    this.functionName = functionName;
    // The init error Lambda logs carries this name: it says which function refused.
    this.name = errorNames[functionName];
  }
}

/** One variable of a function's environment. */
export interface EnvVariable<T> {
  /**
   * The value, from the text trimmed. An issue's message says what the value must be ("a positive integer"); a
   * value that must stop the function whatever the policy is refused from inside the schema with refuseStart.
   */
  readonly value: v.GenericSchema<string, T>;
  /** The value when unset or blank; left out, the variable is required and the function does not start without. */
  readonly default?: T;
  /** A value the schema rejects: `refuse` to start, or `fall back` to the default with a warning. */
  readonly invalid: 'refuse' | 'fall back';
  /**
   * Blank text is a value rather than unset, for a setting whose blank is a mistake: the schema is then given the
   * text as set, untrimmed, so that what it says of a bad one quotes it exactly.
   */
  readonly blankIsSet?: boolean;
  /** A warning when the variable is unset or blank. */
  readonly unsetWarning?: string;
}

export type EnvSchema = Readonly<Record<string, EnvVariable<unknown>>>;
export type SettingsOf<S extends EnvSchema> = {
  -readonly [K in keyof S]: S[K] extends EnvVariable<infer T> ? T : never;
};

/** A function's schema, typed by its variables. */
export function envSchema<S extends { [K in keyof S]: EnvVariable<unknown> }>(
  functionName: FunctionName,
  variables: S,
) {
  return { functionName, variables };
}

/**
 * Stops the function from inside a value's schema, readEnvironment throwing a ConfigError: `sentence` whole, or
 * when `aboutTheValue`, after the variable and its value and before what does not start.
 */
export class StartRefused extends Error {
  readonly aboutTheValue: boolean;
  constructor(sentence: string, aboutTheValue = false) {
    super(sentence);
    this.aboutTheValue = aboutTheValue;
  }
}

/** A check inside a value's schema that stops the function when `passes` is false, saying why ("is above 10"). */
export function refuseStart<T>(passes: (value: T) => boolean, why: string) {
  return v.transform<T, T>((value) => {
    if (!passes(value)) throw new StartRefused(why, true);
    return value;
  });
}

/** Any text (trimmed, as readEnvironment gives every value but that of a `blankIsSet` variable). */
export const text = v.string();

/** A whole number of at least 1, `what` saying it in words ("a whole number of days"). */
export function positiveWholeNumber(what: string) {
  return v.pipe(
    v.string(),
    v.transform(Number),
    v.check((n) => Number.isSafeInteger(n) && n >= 1, what),
  );
}

/** A duration as people type it (`10m`, `2h`, `1d`, `500ms`), in milliseconds, `what` saying it in words. */
export function duration(what: string) {
  return v.pipe(
    v.string(),
    v.transform((text) => parseDuration(text) ?? Number.NaN),
    v.check((ms) => Number.isSafeInteger(ms) && ms >= 1, what),
  );
}

/** `true` or `false`, in any case. */
export const trueOrFalse = v.pipe(
  v.string(),
  v.toLowerCase(),
  v.picklist(['true', 'false'], 'true or false'),
  v.transform((word) => word === 'true'),
);

/**
 * The settings from `env` as `schema` declares them, and the warnings of the values that fell back or of the
 * variables unset that should be set. Throws a ConfigError (one sentence) on a value the function refuses.
 */
export function readEnvironment<S extends EnvSchema>(
  schema: { functionName: FunctionName; variables: S },
  env: Record<string, string | undefined>,
): { settings: SettingsOf<S>; warnings: string[] } {
  const { functionName, variables } = schema;
  const refuse = (sentence: string) => new ConfigError(functionName, sentence);
  const settings: Record<string, unknown> = {};
  const warnings: string[] = [];
  for (const [name, variable] of Object.entries(variables)) {
    const raw = env[name];
    const trimmed = raw?.trim();
    if (raw === undefined || (trimmed === '' && !variable.blankIsSet)) {
      if (!('default' in variable))
        throw refuse(`${name} is not set: ${functionInWords[functionName]} does not start.`);
      if (variable.unsetWarning) warnings.push(variable.unsetWarning);
      settings[name] = variable.default;
      continue;
    }
    let result: v.SafeParseResult<typeof variable.value>;
    try {
      result = v.safeParse(variable.value, variable.blankIsSet ? raw : trimmed);
    } catch (err) {
      if (!(err instanceof StartRefused)) throw err;
      const doesNotStart = `: ${functionInWords[functionName]} does not start.`;
      throw refuse(err.aboutTheValue ? `${name}=${JSON.stringify(raw)} ${err.message}${doesNotStart}` : err.message);
    }
    if (result.success) {
      settings[name] = result.output;
    } else if (variable.invalid === 'refuse' || !('default' in variable)) {
      const what = result.issues[0].message;
      throw refuse(`${name}=${JSON.stringify(raw)} is not ${what}: ${functionInWords[functionName]} does not start.`);
    } else {
      const what = result.issues[0].message;
      warnings.push(`${name}=${JSON.stringify(raw)} is not ${what}; using ${String(variable.default)}`);
      settings[name] = variable.default;
    }
  }
  return { settings: settings as SettingsOf<S>, warnings };
}

/** A default as docs/configuration.md writes it in its Default column: `—` for none, or an empty or absent one. */
export function defaultInWords(variable: EnvVariable<unknown>): string {
  const value = variable.default;
  if (value === undefined || value === null || value === '') return '—';
  return `\`${typeof value === 'object' ? JSON.stringify(value) : String(value)}\``;
}
