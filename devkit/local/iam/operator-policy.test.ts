// The operators' policy, as docs/cli-operations.md prints it, and what it allows the commands.
import { OPERATOR, operatorSession, operatorStatements } from './operator-policy.ts';
import { evaluate } from './policy.ts';

const values = { region: 'us-east-1', account: '000000000000', stage: 'local', eventsQueue: 'events-tail' };
const table = 'arn:aws:dynamodb:us-east-1:000000000000:table/rtc-callbacks-receiver-local-tasks';

test('the policy of the page, its placeholders filled in, none left', () => {
  const statements = operatorStatements(values);
  expect(statements.length).toBeGreaterThan(0);
  expect(JSON.stringify(statements)).not.toMatch(/<[a-z-]+>/);
  expect(statements.map((s) => s.source)).toContain('operator-policy#ReadTasks');
});

test('it allows the reads of the tasks and their indexes, and nothing on another stage or queue', () => {
  const statements = operatorStatements(values);
  const allows = (action: string, resource: string) => evaluate(statements, action, resource).allowed;
  expect(allows('dynamodb:Query', `${table}/index/byRoom`)).toBe(true);
  expect(allows('dynamodb:BatchGetItem', table)).toBe(true);
  expect(allows('dynamodb:Query', table.replace('-local-', '-prod-'))).toBe(false);
  expect(allows('dynamodb:DeleteTable', table)).toBe(false);
  const queue = 'arn:aws:sqs:us-east-1:000000000000:rtc-callbacks-receiver-local-callbacks';
  expect(allows('sqs:ReceiveMessage', `${queue}-dlq`)).toBe(true);
  expect(allows('sqs:ReceiveMessage', 'arn:aws:sqs:us-east-1:000000000000:events-tail')).toBe(true);
  expect(allows('sqs:SendMessage', 'arn:aws:sqs:us-east-1:000000000000:events-tail')).toBe(false);
});

test('a session under the policy refuses what it does not allow, with the operator as principal', () => {
  const session = operatorSession(values);
  expect(() => session.check(OPERATOR, 'DynamoDBClient', 'DeleteTableCommand', { TableName: 'x' })).toThrow(
    /assumed-role\/operator\/callbacks is not authorized to perform: dynamodb:DeleteTable/,
  );
  expect(() => session.check(OPERATOR, 'DynamoDBClient', 'GetItemCommand', { TableName: table })).not.toThrow();
});
