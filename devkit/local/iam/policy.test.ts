import fc from 'fast-check';
import { type PolicyStatement, accessDeniedMessage, assumedRoleArn, evaluate, wildcardMatch } from './policy.ts';

const sourced = (...statements: PolicyStatement[]) =>
  statements.map((statement, i) => ({ statement, source: `#${i}` }));
const table = 'arn:aws:dynamodb:us-east-1:000000000000:table/tasks';

describe('evaluate', () => {
  test('nothing is allowed without an Allow that names the action and the resource', () => {
    expect(evaluate([], 'dynamodb:Query', table).allowed).toBe(false);
    const grants = sourced({ Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: table });
    expect(evaluate(grants, 'dynamodb:GetItem', table).allowed).toBe(true);
    expect(evaluate(grants, 'dynamodb:Query', table).allowed).toBe(false);
    expect(evaluate(grants, 'dynamodb:GetItem', `${table}/index/byRoom`).allowed).toBe(false);
  });

  test('actions match without regard to case, resources with it; * and ? are wildcards', () => {
    const grants = sourced(
      { Effect: 'Allow', Action: 'DynamoDB:get*', Resource: `${table}/index/*` },
      { Effect: 'Allow', Action: 'sqs:?eceiveMessage', Resource: 'arn:aws:sqs:*:*:callbacks' },
    );
    expect(evaluate(grants, 'dynamodb:GetItem', `${table}/index/byRoom`).allowed).toBe(true);
    expect(evaluate(grants, 'dynamodb:GetItem', `${table}/INDEX/byRoom`).allowed).toBe(false);
    expect(evaluate(grants, 'sqs:ReceiveMessage', 'arn:aws:sqs:us-east-1:000000000000:callbacks').allowed).toBe(true);
    expect(evaluate(grants, 'sqs:ReceiveMessage', 'arn:aws:sqs:us-east-1:000000000000:callbacks-dlq').allowed).toBe(
      false,
    );
  });

  test('an explicit Deny wins over any Allow, whatever their order', () => {
    const allow: PolicyStatement = { Effect: 'Allow', Action: 'sns:*', Resource: '*' };
    const deny: PolicyStatement = { Effect: 'Deny', Action: 'sns:Publish', Resource: 'arn:aws:sns:*:*:events' };
    for (const statements of [sourced(allow, deny), sourced(deny, allow)]) {
      const decision = evaluate(statements, 'sns:Publish', 'arn:aws:sns:us-east-1:000000000000:events');
      expect(decision.allowed).toBe(false);
      expect(!decision.allowed && decision.explicitDeny?.statement).toBe(deny);
    }
  });

  test('NotAction and NotResource allow everything but what they name', () => {
    const grants = sourced({ Effect: 'Allow', NotAction: 'dynamodb:DeleteItem', NotResource: `${table}/index/*` });
    expect(evaluate(grants, 'dynamodb:PutItem', table).allowed).toBe(true);
    expect(evaluate(grants, 'dynamodb:DeleteItem', table).allowed).toBe(false);
    expect(evaluate(grants, 'dynamodb:Query', `${table}/index/byDay`).allowed).toBe(false);
  });

  test('a statement matches exactly when the action and resource are among those it lists (property)', () => {
    const word = fc.stringMatching(/^[A-Za-z0-9/:_.-]{1,12}$/);
    fc.assert(
      fc.property(fc.uniqueArray(word, { minLength: 1, maxLength: 5 }), word, word, (names, action, resource) => {
        const grants = sourced({ Effect: 'Allow', Action: names.map((n) => `svc:${n}`), Resource: names });
        const expected = names.some((n) => n.toLowerCase() === action.toLowerCase()) && names.includes(resource);
        expect(evaluate(grants, `svc:${action}`, resource).allowed).toBe(expected);
      }),
    );
  });

  test('dropping an Allow never allows more, dropping a Deny never allows less, a Deny refuses (property)', () => {
    const statement = fc.record({
      Effect: fc.constantFrom('Allow', 'Deny'),
      Action: fc.constantFrom('dynamodb:*', 'dynamodb:Query', 'dynamodb:Get*', 'sqs:SendMessage'),
      Resource: fc.constantFrom('*', table, `${table}*`, `${table}/index/*`),
    });
    fc.assert(
      fc.property(
        fc.array(statement, { maxLength: 6 }),
        fc.nat(),
        fc.constantFrom('dynamodb:Query', 'dynamodb:GetItem', 'sqs:SendMessage'),
        fc.constantFrom(table, `${table}/index/byRoom`),
        (statements, drop, action, resource) => {
          const all = sourced(...statements);
          const dropped = statements.length === 0 ? -1 : drop % statements.length;
          const fewer = all.filter((_, i) => i !== dropped);
          const before = evaluate(all, action, resource).allowed;
          const after = evaluate(fewer, action, resource).allowed;
          if (statements[dropped]?.Effect === 'Allow' && !before) expect(after).toBe(false);
          if (statements[dropped]?.Effect === 'Deny' && before) expect(after).toBe(true);
          const denied = [...all, ...sourced({ Effect: 'Deny', Action: action, Resource: resource })];
          expect(evaluate(denied, action, resource).allowed).toBe(false);
        },
      ),
    );
  });
});

test('wildcards: * spans any characters including : and /, ? exactly one, the rest literally', () => {
  expect(
    wildcardMatch(
      'arn:aws:logs:*:*:log-group:/aws/lambda/x:*',
      'arn:aws:logs:r:a:log-group:/aws/lambda/x:log-stream:s',
    ),
  ).toBe(true);
  expect(wildcardMatch('a?c', 'abc')).toBe(true);
  expect(wildcardMatch('a?c', 'ac')).toBe(false);
  expect(wildcardMatch('a.c', 'abc')).toBe(false);
  expect(wildcardMatch('a(b)+', 'a(b)+')).toBe(true);
});

test("the refusal is AWS's sentence, for an implicit and an explicit deny", () => {
  const principal = assumedRoleArn('000000000000', 'rtc-WorkerRole', 'rtc-local-worker');
  expect(accessDeniedMessage(principal, 'dynamodb:Query', table, { allowed: false })).toBe(
    'User: arn:aws:sts::000000000000:assumed-role/rtc-WorkerRole/rtc-local-worker is not authorized to perform: ' +
      `dynamodb:Query on resource: ${table} because no identity-based policy allows the dynamodb:Query action`,
  );
  const deny = sourced({ Effect: 'Deny', Action: '*', Resource: '*' })[0]!;
  expect(accessDeniedMessage(principal, 'dynamodb:Query', table, { allowed: false, explicitDeny: deny })).toMatch(
    /on resource: \S+ with an explicit deny in an identity-based policy$/,
  );
});
