// A small evaluator of IAM identity-based policies, for the local stack: does this role's set of statements
// allow this action on this resource? It follows IAM's rules for what it covers: an explicit Deny wins over
// any Allow, an Allow is needed, and nothing is allowed by default; `Action`/`NotAction` match
// case-insensitively and `Resource`/`NotResource` case-sensitively, `*` and `?` as wildcards (a `*` in a
// resource also spans `:` and `/`).
//
// Not evaluated (docs/local-stack.md says so): conditions (a statement with a Condition is taken as if its
// condition held), resource-based policies (queue and topic policies, key policies), permission boundaries,
// session policies and service control policies. Pure: no AWS import.

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny' | string;
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: unknown;
}

/** A statement with the policy and role it came from, for messages and for `callbacks doctor`. */
export interface SourcedStatement {
  statement: PolicyStatement;
  /** e.g. `WorkerRole/worker#2` or `WorkerRole/worker#ApplyCallbacksToTasks` (its Sid, when it has one). */
  source: string;
}

export type Decision = { allowed: true; by: SourcedStatement } | { allowed: false; explicitDeny?: SourcedStatement };

const list = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

const patternCache = new Map<string, RegExp>();

/** IAM's wildcard match: `*` any run of characters, `?` any one; everything else literally. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const key = `${ignoreCase ? 'i' : 's'}${pattern}`;
  let re = patternCache.get(key);
  if (!re) {
    const body = pattern
      .split('')
      .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&')))
      .join('');
    re = new RegExp(`^${body}$`, ignoreCase ? 'is' : 's');
    patternCache.set(key, re);
  }
  return re.test(value);
}

function matchesAction(s: PolicyStatement, action: string): boolean {
  if (s.Action !== undefined) return list(s.Action).some((p) => wildcardMatch(p, action, true));
  if (s.NotAction !== undefined) return !list(s.NotAction).some((p) => wildcardMatch(p, action, true));
  return false;
}

function matchesResource(s: PolicyStatement, resource: string): boolean {
  if (s.Resource !== undefined) return list(s.Resource).some((p) => wildcardMatch(p, resource));
  if (s.NotResource !== undefined) return !list(s.NotResource).some((p) => wildcardMatch(p, resource));
  return false;
}

/** Whether the statements allow `action` (service:Operation) on `resource` (an ARN, or `*`). */
export function evaluate(statements: readonly SourcedStatement[], action: string, resource: string): Decision {
  let allow: SourcedStatement | undefined;
  for (const sourced of statements) {
    const s = sourced.statement;
    if (!matchesAction(s, action) || !matchesResource(s, resource)) continue;
    if (s.Effect === 'Deny') return { allowed: false, explicitDeny: sourced };
    if (s.Effect === 'Allow') allow ??= sourced;
  }
  return allow ? { allowed: true, by: allow } : { allowed: false };
}

/** The principal AWS names in its refusals: the role's session as the function assumes it. */
export const assumedRoleArn = (accountId: string, roleName: string, sessionName: string) =>
  `arn:aws:sts::${accountId}:assumed-role/${roleName}/${sessionName}`;

/** The sentence AWS gives when a call is refused, for an implicit or an explicit deny. */
export function accessDeniedMessage(principalArn: string, action: string, resource: string, decision: Decision) {
  const because =
    !decision.allowed && decision.explicitDeny
      ? 'with an explicit deny in an identity-based policy'
      : `because no identity-based policy allows the ${action} action`;
  return `User: ${principalArn} is not authorized to perform: ${action} on resource: ${resource} ${because}`;
}
