// The IAM checks of the local stack (devkit/local/iam/): one session with each function's principal under its
// role, and the event source mapping's under its function's, as the template declares them; the check Lambda
// makes before it creates the mapping; and the read API's callers held to the policy the stack offers them.
import type { Logger } from '../../lib/log.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './deployed-settings.ts';
import { IamSession } from './iam/enforce.ts';
import { READ_API_CALLER, setPrincipals } from './iam/principals.ts';
import { LOCAL_API_ID, type LocalAccount } from './resolved-template.ts';
import type { StackSettings } from './stack-template.ts';
import type { Template } from './template.ts';
import { errorSentence } from '../../lib/text.ts';

/** The actions Lambda needs the role to allow on the queue to create an SQS event source mapping. */
const MAPPING_ACTIONS = ['ReceiveMessage', 'DeleteMessage', 'GetQueueAttributes'] as const;

/**
 * A session with the principals of `template`'s roles, each refusal logged; `useRolesOf` puts the principals
 * of another template's roles (the same resources) in their place.
 */
export function iamSessionOf(
  template: Template,
  account: LocalAccount,
  settings: StackSettings,
  log: Logger,
): { session: IamSession; useRolesOf(next: Template): void } {
  const session = new IamSession({ region: LOCAL_REGION, accountId: LOCAL_ACCOUNT_ID }, (denial) =>
    log.warn('iam_denied', { ...denial }),
  );
  const useRolesOf = (next: Template) =>
    setPrincipals(session, next, account, settings, (fn, policy) =>
      log.warn('iam_policy_unknown', { function: fn, policy, effect: 'it grants nothing locally' }),
    );
  useRolesOf(template);
  return { session, useRolesOf };
}

/** Lambda refuses to create the mapping when the role of `functionKey` cannot consume the queue. */
export function assertMappingCanConsume(session: IamSession, functionKey: string, queueArn: string): void {
  const principal = session.principal(functionKey)!;
  for (const action of MAPPING_ACTIONS) {
    try {
      session.authorize(principal, `sqs:${action}`, queueArn);
    } catch (err) {
      throw new Error(
        `Invalid request provided: The provided execution role does not have permissions to call ${action} ` +
          `on SQS (${errorSentence(err)})`,
      );
    }
  }
}

/**
 * Whether the read API's caller may call `method path` under the policy the stack offers it (a request it
 * does not allow gets 403); without enforced checks (no session) every call may.
 */
export function readApiCallAllowed(session: IamSession | undefined, method: string, path: string): boolean {
  const caller = session?.principal(READ_API_CALLER);
  if (!session || !caller) return true;
  const arn = `arn:aws:execute-api:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${LOCAL_API_ID}/$default/${method}${path}`;
  try {
    session.authorize(caller, 'execute-api:Invoke', arn);
    return true;
  } catch {
    return false;
  }
}
