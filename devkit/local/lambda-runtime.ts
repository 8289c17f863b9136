// Lambda's limits around a deployed handler on the local stack, from the function's settings in the
// template: the invocation ends at the function's time-out (the caller gets Lambda's error, as the event
// source mapping or API Gateway would), a response over 6 MB is refused, the function's role must allow it
// to write its logs, and a warning comes when the process's heap passes the function's memory size.
// Not reproduced: a timed-out handler is not stopped (Lambda freezes and discards its container; here its
// promise runs on in the background, its result ignored), cold starts, and real network latency.
import type { Logger } from '../../lib/log.ts';
import { LambdaRuntimeError, type LocalInvoke } from './lambda-invoke.ts';
import { newRequestContext, type LambdaHandler } from './handlers.ts';
import type { IamSession } from './iam/enforce.ts';
import type { FunctionSettings } from './stack-template.ts';
import { errorSentence } from '../../lib/text.ts';

/** Lambda's limit on a synchronous invocation's response (the SQS event source mapping's too). */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

export interface LocalFunctionOptions {
  settings: FunctionSettings;
  handler: LambdaHandler;
  log: Logger;
  /** The IAM checks in force; the function's principal there is keyed by its `key`. */
  iam?: IamSession;
  /** The log group's name, for the logs permissions (`/aws/lambda/<function>`). */
  logGroupName: string;
  region: string;
  accountId: string;
}

export function localFunction(opts: LocalFunctionOptions): LocalInvoke {
  const { settings, handler, log } = opts;
  let memoryWarned = false;
  const logsChecked = new WeakSet<object>();

  /** Lambda writes the function's logs with its role: without the grants they are lost. Checked once. */
  const checkLogs = () => {
    const principal = opts.iam?.principal(settings.key);
    if (!principal || logsChecked.has(principal)) return;
    logsChecked.add(principal);
    const stream =
      `arn:aws:logs:${opts.region}:${opts.accountId}:log-group:${opts.logGroupName}` +
      ':log-stream:local/[$LATEST]local';
    for (const action of ['logs:CreateLogStream', 'logs:PutLogEvents']) {
      try {
        opts.iam?.authorize(principal, action, stream);
      } catch (err) {
        log.warn('function_logs_denied', {
          function: settings.key,
          reason: errorSentence(err),
          effect: 'deployed, this function would write no log at all',
        });
      }
    }
  };

  return async (event) => {
    checkLogs();
    const timeoutMs = settings.timeoutS * 1000;
    const deadline = Date.now() + timeoutMs;
    const context = newRequestContext(settings.functionName, settings.memoryMb, deadline);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LambdaRuntimeError(
              'Sandbox.Timedout',
              `${context.awsRequestId} Task timed out after ${settings.timeoutS.toFixed(2)} seconds`,
            ),
          ),
        timeoutMs,
      );
    });
    let result: unknown;
    try {
      result = await Promise.race([handler(event, context), timedOut]);
    } catch (err) {
      if (err instanceof LambdaRuntimeError)
        log.error('function_timed_out', { function: settings.key, timeoutS: settings.timeoutS });
      throw err;
    } finally {
      clearTimeout(timer);
    }
    const bytes = result === undefined ? 0 : Buffer.byteLength(JSON.stringify(result) ?? '', 'utf8');
    if (bytes > MAX_RESPONSE_BYTES) {
      log.error('function_response_too_large', { function: settings.key, bytes });
      throw new LambdaRuntimeError(
        'Function.ResponseSizeTooLarge',
        `Response payload size exceeded maximum allowed payload size (${MAX_RESPONSE_BYTES} bytes).`,
      );
    }
    const heapMb = process.memoryUsage().heapUsed / (1024 * 1024);
    if (!memoryWarned && heapMb > settings.memoryMb) {
      memoryWarned = true;
      log.warn('function_memory_exceeded', {
        function: settings.key,
        heapMb: Math.round(heapMb),
        memoryMb: settings.memoryMb,
        note: "the local stack's whole heap (every function and the emulators): an upper bound",
      });
    }
    return result;
  };
}
