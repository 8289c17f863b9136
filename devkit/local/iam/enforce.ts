// IAM enforced on the local stack: every call an AWS SDK client makes is checked against the policy
// statements of the role it runs under (devkit/local/iam/policy.ts) before it reaches the emulator, and refused
// with the error AWS gives when they do not allow it. The check is a middleware at the SDK's initialize
// step: the command's name gives the action, its input the resource ARN.
import type { SourcedStatement } from './policy.ts';
import { accessDeniedMessage, assumedRoleArn, evaluate } from './policy.ts';
import type { CommandInput, MiddlewareClient } from '../sdk-middleware.ts';

/** Where the local resources live, to turn a table name, queue URL or parameter name into its ARN. */
export interface ArnContext {
  region: string;
  accountId: string;
}

export interface RequestedAccess {
  action: string;
  resource: string;
}

/** The IAM service prefix of an SDK client (`DynamoDBClient` -> dynamodb). */
function servicePrefix(clientName: string): string {
  const known: Record<string, string> = {
    DynamoDBClient: 'dynamodb',
    SQSClient: 'sqs',
    SNSClient: 'sns',
    SSMClient: 'ssm',
    STSClient: 'sts',
    KMSClient: 'kms',
    S3Client: 's3',
    FirehoseClient: 'firehose',
  };
  return known[clientName] ?? clientName.replace(/Client$/, '').toLowerCase();
}

/** Operations IAM authorises with another action: the batch forms with their single form. */
const AUTHORISED_AS: Record<string, string> = {
  'sns:PublishBatch': 'sns:Publish',
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
  'sqs:ChangeMessageVisibilityBatch': 'sqs:ChangeMessageVisibility',
  // S3's operations and the actions IAM names them by.
  's3:HeadObject': 's3:GetObject',
  's3:HeadBucket': 's3:ListBucket',
  's3:ListObjectsV2': 's3:ListBucket',
};

/** S3 addresses an object by bucket and key, IAM by `arn:aws:s3:::<bucket>/<key>` (a call on a bucket: its ARN). */
function s3Resource(input: CommandInput): string {
  const bucket = typeof input.Bucket === 'string' ? input.Bucket : '*';
  return typeof input.Key === 'string' ? `arn:aws:s3:::${bucket}/${input.Key}` : `arn:aws:s3:::${bucket}`;
}

const tableArn = (ctx: ArnContext, name: string) =>
  name.startsWith('arn:') ? name : `arn:aws:dynamodb:${ctx.region}:${ctx.accountId}:table/${name}`;

/** SQS addresses a queue by URL; IAM by ARN: the account and name are the URL's last two segments. */
function queueArnOfUrl(ctx: ArnContext, url: string): string {
  const [name, account] = new URL(url).pathname.split('/').filter(Boolean).reverse();
  return `arn:aws:sqs:${ctx.region}:${account ?? ctx.accountId}:${name ?? ''}`;
}

function dynamoResources(ctx: ArnContext, input: CommandInput): string[] {
  if (typeof input.TableName === 'string') {
    const table = tableArn(ctx, input.TableName);
    return [typeof input.IndexName === 'string' ? `${table}/index/${input.IndexName}` : table];
  }
  if (input.RequestItems && typeof input.RequestItems === 'object')
    return Object.keys(input.RequestItems).map((name) => tableArn(ctx, name));
  if (Array.isArray(input.TransactItems)) {
    const names = (input.TransactItems as Array<Record<string, { TableName?: string }>>).flatMap((item) =>
      Object.values(item).map((op) => op.TableName ?? ''),
    );
    return [...new Set(names)].map((name) => tableArn(ctx, name));
  }
  return ['*'];
}

/** The actions and resource ARNs one SDK call needs, as IAM authorises it. */
export function requestedAccess(ctx: ArnContext, clientName: string, commandName: string, input: CommandInput) {
  const service = servicePrefix(clientName);
  const operation = commandName.replace(/Command$/, '');
  const action = AUTHORISED_AS[`${service}:${operation}`] ?? `${service}:${operation}`;
  let resources: string[];
  switch (service) {
    case 'dynamodb':
      resources = dynamoResources(ctx, input);
      break;
    case 'sqs':
      resources =
        typeof input.QueueUrl === 'string'
          ? [queueArnOfUrl(ctx, input.QueueUrl)]
          : typeof input.QueueName === 'string'
            ? [`arn:aws:sqs:${ctx.region}:${ctx.accountId}:${input.QueueName}`]
            : ['*'];
      break;
    case 'sns':
      resources = [
        String(
          input.TopicArn ??
            input.TargetArn ??
            // A subscription (Unsubscribe, its attributes) is authorised on the topic it belongs to: its ARN is the
            // topic's with the subscription's id after a last colon.
            (typeof input.SubscriptionArn === 'string' ? input.SubscriptionArn.replace(/:[^:]*$/, '') : '*'),
        ),
      ];
      break;
    case 'ssm': {
      const names = typeof input.Name === 'string' ? [input.Name] : ((input.Names as string[] | undefined) ?? []);
      resources = names.length
        ? names.map((n) => `arn:aws:ssm:${ctx.region}:${ctx.accountId}:parameter${n.startsWith('/') ? '' : '/'}${n}`)
        : ['*'];
      break;
    }
    case 's3':
      resources = [s3Resource(input)];
      break;
    case 'firehose':
      // Firehose names a stream by its name, IAM by its ARN.
      resources = [
        `arn:aws:firehose:${ctx.region}:${ctx.accountId}:deliverystream/${String(input.DeliveryStreamName ?? '*')}`,
      ];
      break;
    case 'kms':
      resources = [
        typeof input.KeyId === 'string' && input.KeyId.startsWith('arn:')
          ? input.KeyId
          : `arn:aws:kms:${ctx.region}:${ctx.accountId}:key/${String(input.KeyId ?? '*')}`,
      ];
      break;
    default:
      resources = ['*'];
  }
  return resources.map((resource): RequestedAccess => ({ action, resource }));
}

/** A refused call, as the SDK reports a service's error. */
class AccessDeniedError extends Error {
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
  readonly action: string;
  readonly resource: string;
  constructor(name: string, message: string, action: string, resource: string) {
    super(message);
    this.name = name;
    this.action = action;
    this.resource = resource;
  }
}

/** The error name each service gives a refused call. */
const DENIED_ERROR: Record<string, string> = { sns: 'AuthorizationErrorException' };

export interface Principal {
  /** What refusals name: the role and the session (the function's name). */
  roleName: string;
  sessionName: string;
  statements: readonly SourcedStatement[];
}

export interface Denial {
  principal: string;
  action: string;
  resource: string;
  message: string;
}

const IAM_MIDDLEWARE = 'localIamEnforcement';

/**
 * The checks of one running local stack. A function's clients are built once per process (when its module
 * is first imported) and keep their middleware, which asks the session in force at each call for the
 * function's principal: a stack started again in the same process, or a test that swaps a role's
 * statements, is obeyed at once. No session, or no principal for the function: the call goes through.
 */
export class IamSession {
  readonly ctx: ArnContext;
  private readonly principals = new Map<string, Principal>();
  /** Every call refused so far, oldest first. */
  readonly denials: Denial[] = [];
  /** Every call allowed so far: `<session> <action> <resource>` -> the statement that allowed it. */
  readonly grants = new Map<string, string>();
  private readonly onDenied: ((denial: Denial) => void) | undefined;

  constructor(ctx: ArnContext, onDenied?: (denial: Denial) => void) {
    this.ctx = ctx;
    this.onDenied = onDenied;
  }

  setPrincipal(key: string, principal: Principal): void {
    this.principals.set(key, principal);
  }

  principal(key: string): Principal | undefined {
    return this.principals.get(key);
  }

  /** Checks one request; throws the service's AccessDenied error when the principal may not make it. */
  check(key: string, clientName: string, commandName: string, input: CommandInput): void {
    const principal = this.principals.get(key);
    if (!principal) return;
    for (const { action, resource } of requestedAccess(this.ctx, clientName, commandName, input)) {
      this.authorize(principal, action, resource, servicePrefix(clientName));
    }
  }

  /** Checks one action on one resource for the principal; throws as `check` does. */
  authorize(principal: Principal, action: string, resource: string, service = action.split(':')[0] ?? ''): void {
    const decision = evaluate(principal.statements, action, resource);
    if (decision.allowed) {
      this.grants.set(`${principal.sessionName} ${action} ${resource}`, decision.by.source);
      return;
    }
    const principalArn = assumedRoleArn(this.ctx.accountId, principal.roleName, principal.sessionName);
    const message = accessDeniedMessage(principalArn, action, resource, decision);
    const denial = { principal: principalArn, action, resource, message };
    this.denials.push(denial);
    this.onDenied?.(denial);
    throw new AccessDeniedError(DENIED_ERROR[service] ?? 'AccessDeniedException', message, action, resource);
  }
}

let current: IamSession | undefined;

/** Makes `session` the one in force (undefined: none, every call goes through); returns the previous one. */
export function setIamSession(session: IamSession | undefined): IamSession | undefined {
  const previous = current;
  current = session;
  return previous;
}

/**
 * Adds the check to a client: its calls run under the principal that `session`, or else the session in force
 * at each call, has for `key`.
 */
export function enforceIam(client: object, key: string, session?: IamSession): void {
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => async (args) => {
      const checks = session ?? current;
      checks?.check(key, String(context.clientName ?? ''), String(context.commandName ?? ''), args.input ?? {});
      return next(args);
    },
    { step: 'initialize', name: IAM_MIDDLEWARE, priority: 'high' },
  );
}
