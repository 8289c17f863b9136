// The policy docs/cli-operations.md tells operators to attach for the `callbacks` commands, read from that
// page (the JSON block after its `operator-policy` marker) and filled in for a stack: the local stack holds
// the commands run against it to this policy, so that the page and the commands cannot drift apart.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../template.ts';
import { IamSession, type Principal } from './enforce.ts';
import type { PolicyStatement, SourcedStatement } from './policy.ts';

const OPERATOR_POLICY_PAGE = 'docs/cli-operations.md';
const MARKER = '<!-- operator-policy -->';
/** The key of the operator's calls in an IamSession. */
export const OPERATOR = 'operator';

export interface OperatorPlaceholders {
  region: string;
  account: string;
  stage: string;
  /** The name of the queue subscribed to the task-events topic. */
  eventsQueue: string;
}

/** The policy's statements with its placeholders filled in. */
export function operatorStatements(values: OperatorPlaceholders, root = PROJECT_ROOT): SourcedStatement[] {
  const page = readFileSync(join(root, OPERATOR_POLICY_PAGE), 'utf8');
  const block = /```json\n([\s\S]*?)\n```/.exec(page.slice(page.indexOf(MARKER)));
  if (page.indexOf(MARKER) < 0 || !block) throw new Error(`${OPERATOR_POLICY_PAGE} holds no operator policy`);
  const filled = block[1]!
    .replaceAll('<region>', values.region)
    .replaceAll('<account>', values.account)
    .replaceAll('<stage>', values.stage)
    .replaceAll('<events-queue>', values.eventsQueue);
  const statements = (JSON.parse(filled) as { Statement: PolicyStatement[] }).Statement;
  return statements.map((statement, i) => ({ statement, source: `operator-policy#${statement.Sid ?? i}` }));
}

/** The checks of the commands run against a local stack, under the operators' policy. */
export function operatorSession(values: OperatorPlaceholders): IamSession {
  const session = new IamSession({ region: values.region, accountId: values.account });
  const principal: Principal = {
    roleName: 'operator',
    sessionName: 'callbacks',
    statements: operatorStatements(values),
  };
  session.setPrincipal(OPERATOR, principal);
  return session;
}
