// The intrinsic functions of a template, resolved to the local resources' names and ARNs.
import { ResolvedTemplate, TemplateError } from './resolved-template.ts';
import { roleStatements } from './stack-template.ts';
import type { Template } from './template.ts';

const template: Template = {
  Parameters: { Stage: { Default: 'local' }, Param: { Default: '/svc/secrets' } },
  Conditions: {
    IsLocal: { 'Fn::Equals': [{ Ref: 'Stage' }, 'local'] },
    NotLocal: { 'Fn::Not': [{ Condition: 'IsLocal' }] },
  },
  Resources: {
    Table: { Type: 'AWS::DynamoDB::Table', Properties: { TableName: { 'Fn::Sub': 'svc-${Stage}-tasks' } } },
    Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'svc-q' } },
    Topic: { Type: 'AWS::SNS::Topic', Properties: { TopicName: 'svc-events' } },
    Key: { Type: 'AWS::KMS::Key', Properties: {} },
    Role: {
      Type: 'AWS::IAM::Role',
      Properties: {
        Policies: [
          {
            PolicyName: 'inline',
            PolicyDocument: {
              Statement: [
                {
                  Sid: 'Tasks',
                  Effect: 'Allow',
                  Action: 'dynamodb:Query',
                  Resource: { 'Fn::Sub': '${Table.Arn}/index/*' },
                },
                { Effect: 'Allow', Action: 'kms:GenerateDataKey', Resource: { 'Fn::GetAtt': ['Key', 'Arn'] } },
              ],
            },
          },
        ],
        ManagedPolicyArns: ['arn:aws:iam::aws:policy/ReadOnlyAccess'],
      },
    },
    Extra: {
      Type: 'AWS::IAM::Policy',
      Properties: {
        Roles: [{ Ref: 'Role' }],
        PolicyDocument: {
          Statement: { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': 'Queue.Arn' } },
        },
      },
    },
  },
};

const t = new ResolvedTemplate(template, {
  region: 'eu-west-1',
  accountId: '123456789012',
  stackName: 'svc-local',
  sqsEndpoint: 'http://127.0.0.1:4566',
  parameters: { Stage: 'local' },
});

test('Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::If and conditions, for the local resources', () => {
  expect(t.value({ Ref: 'Table' })).toBe('svc-local-tasks');
  expect(t.value({ 'Fn::GetAtt': ['Table', 'Arn'] })).toBe(
    'arn:aws:dynamodb:eu-west-1:123456789012:table/svc-local-tasks',
  );
  expect(t.value({ Ref: 'Queue' })).toBe('http://127.0.0.1:4566/123456789012/svc-q');
  expect(t.value({ Ref: 'Topic' })).toBe('arn:aws:sns:eu-west-1:123456789012:svc-events');
  expect(t.value({ 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${Param}' })).toBe(
    'arn:aws:ssm:eu-west-1:123456789012:parameter/svc/secrets',
  );
  expect(t.value({ 'Fn::Sub': ['${A}-${!Literal}', { A: { Ref: 'Stage' } }] })).toBe('local-${!Literal}');
  expect(t.value({ 'Fn::Join': ['/', ['a', { Ref: 'Stage' }]] })).toBe('a/local');
  expect(t.value({ 'Fn::Select': [1, { 'Fn::Split': [',', 'x,y'] }] })).toBe('y');
  expect(t.value({ 'Fn::If': ['NotLocal', 'deployed', 'local'] })).toBe('local');
  expect(() => t.value({ 'Fn::ImportValue': 'x' })).toThrow(TemplateError);
});

test('Ref AWS::NoValue leaves its property (or list item) out, as CloudFormation does: it was an empty string', () => {
  const environment = { A: 'a', B: { 'Fn::If': ['NotLocal', 'deployed', { Ref: 'AWS::NoValue' }] } };
  expect(t.value(environment)).toEqual({ A: 'a' });
  expect(t.value(['x', { 'Fn::If': ['IsLocal', { Ref: 'AWS::NoValue' }, 'y'] }])).toEqual(['x']);
});

test("a role's statements: inline, and the template's policies attached to it; an AWS-managed one is unknown", () => {
  const { statements, unknownPolicies } = roleStatements(t, 'Role');
  expect(statements.map((s) => [s.source, s.statement.Resource])).toEqual([
    ['Role/inline#Tasks', 'arn:aws:dynamodb:eu-west-1:123456789012:table/svc-local-tasks/index/*'],
    ['Role/inline#1', 'arn:aws:kms:eu-west-1:123456789012:key/local-Key'],
    ['Extra#0', 'arn:aws:sqs:eu-west-1:123456789012:svc-q'],
  ]);
  expect(unknownPolicies).toEqual(['arn:aws:iam::aws:policy/ReadOnlyAccess']);
});
