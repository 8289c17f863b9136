// The choices a local stack starts with (devkit/local/stack.ts): its options, and the secrets, signature mode
// and source allow-list each read from an option, else the environment, else a default, and checked before
// anything starts, so that a bad value fails the start with its sentence instead of answering every call.
import { parseSecrets } from '../../lib/signature/secrets.ts';
import { parseAllowList } from '../../lib/signature/source-ip.ts';
import { parseSignatureMode, type SignatureMode, SIGNATURE_MODES_IN_WORDS } from '../../lib/signature/verdicts.ts';
import { DEFAULT_SECRETS } from './demo-secrets.ts';
import type { FaultRates } from './fault-spec.ts';
import type { Template } from './template.ts';

/** Seconds before a failed record is retried locally (deployed: the queue's 180 s visibility time-out). */
export const DEFAULT_RETRY_DELAY_S = 10;

/** How often the scheduled functions run locally (deployed: their schedule, every 5 minutes for the sweeper). */
export const DEFAULT_SCHEDULE_EVERY_MS = 10_000;

export interface LocalStackOptions {
  /** HTTP port of the callback routes; 0 picks a free one. */
  port?: number;
  /** Address of the callback routes (default 127.0.0.1). The emulators listen on 127.0.0.1 whatever it is. */
  host?: string;
  /** Keep nothing on disk. */
  memory?: boolean;
  /** Where the data lives, relative to `cwd`. */
  dataDir?: string;
  /** The folder whose `.data/stack.json` announces the stack (default: the current directory). */
  cwd?: string;
  /** appKey -> secrets; default: env CALLBACK_SECRETS, else DEFAULT_SECRETS. */
  secrets?: Record<string, readonly string[]>;
  /** Default: env SIGNATURE_MODE, else enforce. */
  signatureMode?: SignatureMode;
  /** Source ranges allowed to post callbacks (ALLOWED_SOURCE_CIDRS); default: that env variable, else any. */
  allowedSourceCidrs?: readonly string[];
  /** Silences the JSON log lines of the handlers and the poller while the stack runs. */
  quiet?: boolean;
  /** See SqsPollerOptions.retryDelaySeconds; default DEFAULT_RETRY_DELAY_S. */
  retryDelaySeconds?: number;
  /** How often the scheduled functions (the sweeper) run; default DEFAULT_SCHEDULE_EVERY_MS, 0: only on demand. */
  scheduleEveryMs?: number;
  /** The stage's SETTLE_AFTER (a duration such as 30s, 10m): the template's parameter for this stack. */
  settleAfter?: string;
  /**
   * The sweeper's SWEEP_LOOK_BACK (a duration such as 2h): how far back the first sweep of the fresh table reads
   * its DUE buckets, one query each (default the function's, a day: 288 buckets of 5 minutes).
   */
  sweepLookBack?: string;
  /** Emulator ports (default: free ones). A restart in the same process must reuse them: see handlers.ts. */
  dynamoPort?: number;
  sqsPort?: number;
  /** The console's built files (dist/console): served under /console/ when given. */
  consoleDir?: string;
  /** Where CALLBACK_SECRETS and SIGNATURE_MODE are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Check every AWS call of a function against its role in the template (default true). Off only for
   * debugging (`callbacks dev --no-iam`): the local stack then allows what the deployed one refuses.
   */
  iam?: boolean;
  /** The template to run (default: the packaged template of the local stage, devkit/local/template.ts). */
  template?: Template;
  /** Faults to provoke (devkit/local/faults.ts), drawn from `seed` (default: a random one, given in `stack.faults`). */
  faults?: { rates: FaultRates; seed?: string };
}

/** Where the secrets came from: the `secrets` option, env CALLBACK_SECRETS, or DEFAULT_SECRETS. */
export type SecretsSource = 'option' | 'env' | 'default';

export function resolveSecrets(
  opts: LocalStackOptions,
  env: NodeJS.ProcessEnv,
): { json: string; appKeys: string[]; source: SecretsSource } {
  let json: string;
  let source: SecretsSource;
  if (opts.secrets) {
    json = JSON.stringify(opts.secrets);
    source = 'option';
  } else if (env.CALLBACK_SECRETS !== undefined && env.CALLBACK_SECRETS.trim() !== '') {
    json = env.CALLBACK_SECRETS;
    source = 'env';
  } else {
    json = JSON.stringify(DEFAULT_SECRETS);
    source = 'default';
  }
  // Refuse to start on unusable secrets rather than answer every callback 503. The error names no secret.
  const parsed = parseSecrets(json, source === 'env' ? 'CALLBACK_SECRETS' : 'the secrets option');
  return { json, appKeys: [...parsed.keys()], source };
}

export function resolveMode(opts: LocalStackOptions, env: NodeJS.ProcessEnv): SignatureMode {
  const raw = opts.signatureMode ?? env.SIGNATURE_MODE ?? 'enforce';
  const mode = parseSignatureMode(raw);
  if (!mode)
    throw new Error(
      `signature mode must be ${SIGNATURE_MODES_IN_WORDS}, not ${JSON.stringify(raw.trim().toLowerCase())}`,
    );
  return mode;
}

/**
 * The allow-list as the ingest will get it (`cidrs`, unset when none is given), checked here with the
 * ingest's own parser, and the ranges it allows.
 */
export function resolveAllowedSources(opts: LocalStackOptions, env: NodeJS.ProcessEnv) {
  const cidrs = opts.allowedSourceCidrs?.join(',') ?? env.ALLOWED_SOURCE_CIDRS;
  const allowed = parseAllowList(cidrs, opts.allowedSourceCidrs ? '--allow-cidr' : 'ALLOWED_SOURCE_CIDRS');
  return { cidrs, ranges: allowed?.ranges ?? [] };
}
