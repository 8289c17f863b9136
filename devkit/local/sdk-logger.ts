// The AWS SDK's own log line of each call: its logger middleware builds the line (every request and response
// walked through the command's schema to mask what is sensitive) whenever the client's logger has an `info`,
// the default no-op logger included: about a tenth of the CPU a call to the emulators costs. A logger without
// `info` is not handed the line, so it is not built; warnings and errors still have somewhere to go, nowhere.
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { MiddlewareClient } from './sdk-middleware.ts';

export const QUIET_SDK_LOGGER = { debug() {}, warn() {}, error() {} } as unknown as NonNullable<
  DynamoDBClientConfig['logger']
>;

/** The same for a client built elsewhere (a function's, through the local stack's client hook). */
export function quietSdkLogging(client: object): void {
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => async (args) => {
      context.logger = QUIET_SDK_LOGGER;
      return next(args);
    },
    { step: 'initialize', name: 'localQuietSdkLogging', priority: 'high' },
  );
}
