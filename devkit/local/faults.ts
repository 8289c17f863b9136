// Faults provoked on purpose on the local stack (`callbacks dev --faults dynamo=0.05,crash=0.02,sns=0.1`), so
// that what a deployed stage meets now and then (DynamoDB throttled or failing, a worker that dies mid-batch,
// SNS refusing a publish) can be seen and practised on a laptop: retries, dead letters, `callbacks dlq redrive`.
// Each kind fails a share of the calls at its rate, drawn from a seeded generator per kind, so that a seed
// gives the same sequence of draws again. The emulators themselves cannot fail on demand, so the faults are
// a middleware on the functions' SDK clients (added to every client as it is built, like the IAM checks, and
// idle unless a session is set) and a wrapper around the worker's invocations.
import { createRandom, type Random } from '../emulator/random.ts';
import type { Logger } from '../../lib/log.ts';
import { LambdaRuntimeError, type LocalInvoke } from './lambda-invoke.ts';
import type { MiddlewareClient } from './sdk-middleware.ts';
import { describeFaults, FAULT_KINDS, type FaultKind, type FaultRates } from './fault-spec.ts';

/** The faults in force on a running stack. */
export interface FaultSession {
  /** The rates in force; `setRates` changes them for the calls to come. */
  readonly rates: FaultRates;
  setRates(rates: FaultRates): void;
  readonly seed: string;
  /** How many of each kind were injected so far. */
  readonly injected: Readonly<Record<FaultKind, number>>;
  /** Whether the next call of this kind fails, and if so where: before the call, or after it (done, yet failed). */
  draw(kind: FaultKind, canFailAfter: boolean): 'before' | 'after' | null;
  log: Logger;
}

export function createFaultSession(rates: FaultRates, seed: string, log: Logger): FaultSession {
  const injected: Record<FaultKind, number> = { dynamo: 0, crash: 0, sns: 0 };
  const randoms = new Map<FaultKind, Random>(FAULT_KINDS.map((k) => [k, createRandom(`${seed}:${k}`)]));
  let current = { ...rates };
  return {
    get rates() {
      return current;
    },
    setRates(next) {
      current = { ...next };
      log.info('faults_changed', { faults: describeFaults(current) });
    },
    seed,
    injected,
    log,
    draw(kind, canFailAfter) {
      const random = randoms.get(kind)!;
      if (!random.chance(current[kind] ?? 0)) return null;
      injected[kind] += 1;
      return canFailAfter && random.chance(0.5) ? 'after' : 'before';
    },
  };
}

let session: FaultSession | undefined;

/** Sets the faults every client and worker invocation meets from now on (undefined: none); returns the previous. */
export function setFaultSession(next: FaultSession | undefined): FaultSession | undefined {
  const previous = session;
  session = next;
  return previous;
}

/** An error as the SDK reports a service's, its message saying it was provoked. */
function serviceError(name: string, message: string, status: number): Error {
  return Object.assign(new Error(`${message} (injected by --faults)`), {
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status, attempts: 1 },
  });
}

const DYNAMO_WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);
const SNS_PUBLISHES = new Set(['PublishCommand', 'PublishBatchCommand']);

/**
 * Adds the faults to a client of function `functionKey`. The middleware sits at the initialize step, before
 * the SDK's own retries: an injected error reaches the function as a call that failed for good.
 */
export function injectFaults(client: object, functionKey: string): void {
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => async (args) => {
      const faults = session;
      const clientName = String(context.clientName);
      const commandName = String(context.commandName);
      const kind: FaultKind | null =
        clientName === 'DynamoDBClient'
          ? 'dynamo'
          : clientName === 'SNSClient' && SNS_PUBLISHES.has(commandName)
            ? 'sns'
            : null;
      const when = faults && kind ? faults.draw(kind, kind === 'dynamo' && DYNAMO_WRITES.has(commandName)) : null;
      if (!faults || !when) return next(args);
      faults.log.warn('fault_injected', { kind, function: functionKey, call: commandName, when });
      if (when === 'after') await next(args);
      throw kind === 'sns'
        ? serviceError('ThrottledException', 'Rate exceeded', 400)
        : when === 'after'
          ? serviceError('InternalServerError', 'Internal server error', 500)
          : serviceError(
              'ProvisionedThroughputExceededException',
              'The level of configured provisioned throughput for the table was exceeded',
              400,
            );
    },
    { step: 'initialize', name: 'localFaults' },
  );
}

/**
 * The worker invoked as the event source mapping invokes it, dying at the crash rate: before the batch (nothing
 * done) or after it (its writes done, its answer lost). Either way the whole batch comes back to the queue.
 */
export function withCrashes(invoke: LocalInvoke, functionKey: string): LocalInvoke {
  return async (event) => {
    const faults = session;
    const when = faults?.draw('crash', true) ?? null;
    if (!faults || !when) return invoke(event);
    faults.log.warn('fault_injected', { kind: 'crash', function: functionKey, when });
    if (when === 'after') await invoke(event);
    throw new LambdaRuntimeError(
      'Runtime.ExitError',
      'Runtime exited with error: signal: killed (injected by --faults)',
    );
  };
}
