// The standard callback queue of earlier versions, kept for one deploy while it drains (stage parameter
// `legacyQueue=true`; docs/deployment.md, "Upgrading to the FIFO queue"). Its resources keep their logical
// ids and settings, so that CloudFormation leaves the queues and their messages in place, and the worker's
// event source mapping on them (the logical id osls gave it) goes on delivering what they hold. Deployed
// again without the parameter, the stack deletes them: only once both are empty.
'use strict';

const { booleanParam } = require('./stage-params.cjs');

const getAtt = (id, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });

module.exports = async ({ resolveVariable }) => {
  if (!booleanParam('legacyQueue', await resolveVariable('param:legacyQueue'))) return {};
  const prefix = `${await resolveVariable('self:service')}-${await resolveVariable('sls:stage')}`;
  return {
    Resources: {
      CallbackQueue: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          QueueName: `${prefix}-callbacks`,
          VisibilityTimeout: 180,
          MessageRetentionPeriod: 345600,
          SqsManagedSseEnabled: true,
          RedrivePolicy: { deadLetterTargetArn: getAtt('CallbackDeadLetterQueue'), maxReceiveCount: 5 },
        },
      },
      CallbackDeadLetterQueue: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          QueueName: `${prefix}-callbacks-dlq`,
          MessageRetentionPeriod: 1209600,
          SqsManagedSseEnabled: true,
          RedriveAllowPolicy: {
            redrivePermission: 'byQueue',
            sourceQueueArnList: [
              { 'Fn::Sub': `arn:\${AWS::Partition}:sqs:\${AWS::Region}:\${AWS::AccountId}:${prefix}-callbacks` },
            ],
          },
        },
      },
      LegacyCallbackQueuesPolicy: {
        Type: 'AWS::SQS::QueuePolicy',
        Properties: {
          Queues: [{ Ref: 'CallbackQueue' }, { Ref: 'CallbackDeadLetterQueue' }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Sid: 'DenyUnencryptedTransport',
                Effect: 'Deny',
                Principal: '*',
                Action: 'sqs:*',
                Resource: [getAtt('CallbackQueue'), getAtt('CallbackDeadLetterQueue')],
                Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              },
            ],
          },
        },
      },
      // What the event source mapping on the old queue does with the worker's role, as on the new one.
      WorkerLegacyQueuePolicy: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          PolicyName: 'worker-legacy-queue',
          Roles: [{ Ref: 'WorkerRole' }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Sid: 'ConsumeLegacyCallbackQueue',
                Effect: 'Allow',
                Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
                Resource: getAtt('CallbackQueue'),
              },
            ],
          },
        },
      },
      // The settings the mapping had on the standard queue: a second event source of the worker.
      WorkerEventSourceMappingSQSCallbackQueue: {
        Type: 'AWS::Lambda::EventSourceMapping',
        DependsOn: ['WorkerLegacyQueuePolicy'],
        Properties: {
          EventSourceArn: getAtt('CallbackQueue'),
          FunctionName: getAtt('WorkerLambdaFunction'),
          Enabled: true,
          BatchSize: 25,
          MaximumBatchingWindowInSeconds: 1,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ScalingConfig: { MaximumConcurrency: 10 },
        },
      },
    },
    Outputs: {
      LegacyQueueUrl: {
        Description: 'The standard callback queue of earlier versions, draining into the worker.',
        Value: { Ref: 'CallbackQueue' },
      },
      LegacyDeadLetterQueueUrl: {
        Description: 'Its dead-letter queue: redrive it into QueueUrl before the queue is removed.',
        Value: { Ref: 'CallbackDeadLetterQueue' },
      },
    },
  };
};
