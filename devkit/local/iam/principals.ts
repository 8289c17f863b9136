// Who each call of the local stack runs as: each function under its role, and the event source mapping
// under its function's role, as the template declares them (devkit/local/stack-template.ts).
import { ResolvedTemplate } from '../resolved-template.ts';
import { managedPolicyStatements, roleStatements, type StackSettings } from '../stack-template.ts';
import type { Template } from '../template.ts';
import type { IamSession } from './enforce.ts';

/**
 * The key of the read API's callers: a principal with the managed policy the stack offers them (its ARN is
 * the output `ReadApiInvokePolicyArn`) and nothing else.
 */
export const READ_API_CALLER = 'read-api-caller';

/** The key of the event source mapping's calls in an IamSession (a function's own calls: its key). */
export const eventSourceMappingKey = (functionKey: string) => `${functionKey}:event-source-mapping`;

/**
 * Sets in `session` the principal of each function of `settings` and of its event source mapping, with the
 * statements the roles of `template` give them. The mapping also gets the local poller's own shortcut
 * (ChangeMessageVisibility on its queue, for the retry delay), which is the local stack's, not the role's.
 */
export function setPrincipals(
  session: IamSession,
  template: Template,
  account: ResolvedTemplate['account'],
  settings: StackSettings,
  onUnknownPolicy: (functionKey: string, policyArn: string) => void = () => {},
): void {
  const roles = new ResolvedTemplate(template, account);
  for (const fn of settings.functions) {
    const { statements, unknownPolicies } = roleStatements(roles, fn.roleLogicalId);
    for (const arn of unknownPolicies) onUnknownPolicy(fn.key, arn);
    session.setPrincipal(fn.key, { roleName: fn.roleName, sessionName: fn.functionName, statements });
  }
  const callerPolicy = ResolvedTemplate.target(template.Outputs?.ReadApiInvokePolicyArn?.Value);
  if (callerPolicy && template.Resources[callerPolicy]?.Type === 'AWS::IAM::ManagedPolicy')
    session.setPrincipal(READ_API_CALLER, {
      roleName: 'read-api-caller',
      sessionName: 'local',
      statements: managedPolicyStatements(roles, callerPolicy),
    });
  for (const mapping of settings.mappings) {
    const fn = settings.functions.find((f) => f.key === mapping.functionKey)!;
    const queue = settings.queues.find((q) => q.logicalId === mapping.queue)!;
    session.setPrincipal(eventSourceMappingKey(fn.key), {
      roleName: fn.roleName,
      sessionName: fn.functionName,
      statements: [
        ...roleStatements(roles, fn.roleLogicalId).statements,
        {
          statement: { Effect: 'Allow', Action: 'sqs:ChangeMessageVisibility', Resource: queue.arn },
          source: 'local stack: the retry delay',
        },
      ],
    });
  }
}
