// What the local stack takes from the packaged template (devkit/local/template.ts), resolved for the local
// stage (devkit/local/resolved-template.ts): the settings the stack is built from: the table, the queues and
// their redrive, the topics and subscriptions, each function's module, environment, memory, time-out and
// role, the event source mapping, the HTTP API's routes, and each role's policy statements.
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import type { PolicyStatement, SourcedStatement } from './iam/policy.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, LOCAL_STAGE, SERVICE } from './deployed-settings.ts';
import { type Json, ResolvedTemplate, TemplateError } from './resolved-template.ts';
import { loadTemplate, type Template, type TemplateResource } from './template.ts';

export interface TableSettings {
  logicalId: string;
  name: string;
  /** CreateTable's input for the emulator (keys, attributes, indexes). */
  create: CreateTableCommandInput;
}

export interface QueueSettings {
  logicalId: string;
  name: string;
  url: string;
  arn: string;
  /** The attributes SetQueueAttributes takes: VisibilityTimeout, MessageRetentionPeriod, RedrivePolicy... */
  attributes: Record<string, string>;
  /** The attributes fixed when a queue is created: FifoQueue and its deduplication and throughput modes. */
  createAttributes: Record<string, string>;
  /** A FIFO queue: one batch per message group at a time, in order. */
  fifo: boolean;
  visibilityTimeoutS: number;
  /** maxReceiveCount of its RedrivePolicy, when it has one. */
  maxReceiveCount?: number;
  deadLetterQueue?: string;
}

export interface SubscriptionSettings {
  protocol: string;
  endpoint: string;
  /** The logical id of the subscribed queue (protocol sqs), when it is one of the template's. */
  queueLogicalId?: string;
  attributes: Record<string, string>;
}

export interface TopicSettings {
  logicalId: string;
  name: string;
  arn: string;
  subscriptions: SubscriptionSettings[];
}

export interface FunctionSettings {
  /** The name of its code, `functions/<key>.ts` (and `dist/<key>.zip` when deployed). */
  key: string;
  logicalId: string;
  functionName: string;
  /** The export the template's Handler names (`index.handler` -> handler). */
  exportName: string;
  environment: Record<string, string>;
  /** The variables the template gives as plain strings (not a reference to a resource or parameter). */
  literalVariables: string[];
  /** The ARNs of its layers. */
  layers: string[];
  memoryMb: number;
  timeoutS: number;
  roleLogicalId: string;
  roleName: string;
}

export interface EventSourceMappingSettings {
  queue: string;
  functionKey: string;
  batchSize: number;
  batchingWindowS: number;
  reportBatchItemFailures: boolean;
  maximumConcurrency: number;
}

export interface RouteSettings {
  routeKey: string;
  functionKey: string;
  authorization: string;
}

/** A function the template invokes on a schedule (an EventBridge rule). */
export interface ScheduleSettings {
  functionKey: string;
  expression: string;
}

export interface StackSettings {
  table: TableSettings;
  queues: QueueSettings[];
  topics: TopicSettings[];
  functions: FunctionSettings[];
  mappings: EventSourceMappingSettings[];
  routes: RouteSettings[];
  schedules: ScheduleSettings[];
}

/** Lambda's defaults when the template leaves a setting out. */
const LAMBDA_DEFAULTS = { memoryMb: 128, timeoutS: 3 };
/** Lambda's defaults of an SQS event source mapping. */
const MAPPING_DEFAULTS = { batchSize: 10, batchingWindowS: 0, maximumConcurrency: 1000 };

const props = (r: TemplateResource) => (r.Properties ?? {}) as Record<string, Json>;

function tableSettings(t: ResolvedTemplate): TableSettings {
  const tables = t.resourcesOfType('AWS::DynamoDB::Table');
  if (tables.length !== 1) throw new TemplateError(`the local stack runs one table; the template has ${tables.length}`);
  const [logicalId, r] = tables[0]!;
  const p = t.value(props(r)) as Record<string, Json>;
  const name = t.physical(logicalId).ref;
  const create = {
    TableName: name,
    AttributeDefinitions: p.AttributeDefinitions,
    KeySchema: p.KeySchema,
    BillingMode: p.BillingMode ?? 'PROVISIONED',
    ...(p.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes } : {}),
    ...(p.LocalSecondaryIndexes ? { LocalSecondaryIndexes: p.LocalSecondaryIndexes } : {}),
    ...(p.ProvisionedThroughput ? { ProvisionedThroughput: p.ProvisionedThroughput } : {}),
  } as CreateTableCommandInput;
  return { logicalId, name, create };
}

function queueSettings(t: ResolvedTemplate): QueueSettings[] {
  const queues = t.resourcesOfType('AWS::SQS::Queue').map(([logicalId, r]): QueueSettings => {
    const p = props(r);
    const physical = t.physical(logicalId);
    const attributes: Record<string, string> = {};
    const createAttributes: Record<string, string> = {};
    for (const key of ['FifoQueue', 'ContentBasedDeduplication', 'DeduplicationScope', 'FifoThroughputLimit']) {
      if (p[key] !== undefined) createAttributes[key] = String(t.value(p[key]));
    }
    for (const key of ['VisibilityTimeout', 'MessageRetentionPeriod', 'DelaySeconds', 'MaximumMessageSize']) {
      if (p[key] !== undefined) attributes[key] = String(t.value(p[key]));
    }
    let maxReceiveCount: number | undefined;
    let deadLetterQueue: string | undefined;
    if (p.RedrivePolicy !== undefined) {
      const raw = p.RedrivePolicy as Record<string, Json>;
      deadLetterQueue = ResolvedTemplate.target(raw.deadLetterTargetArn);
      const redrive = t.value(raw) as { deadLetterTargetArn: string; maxReceiveCount: number | string };
      maxReceiveCount = Number(redrive.maxReceiveCount);
      attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: redrive.deadLetterTargetArn, maxReceiveCount });
    }
    return {
      logicalId,
      name: physical.attributes.QueueName!,
      url: physical.ref,
      arn: physical.attributes.Arn!,
      attributes,
      createAttributes,
      fifo: createAttributes.FifoQueue === 'true',
      // SQS's default.
      visibilityTimeoutS: Number(attributes.VisibilityTimeout ?? 30),
      ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
      ...(deadLetterQueue !== undefined ? { deadLetterQueue } : {}),
    };
  });
  // Dead-letter queues first: a redrive policy names a queue that must exist.
  return queues.sort((a, b) => Number(a.deadLetterQueue !== undefined) - Number(b.deadLetterQueue !== undefined));
}

function topicSettings(t: ResolvedTemplate): TopicSettings[] {
  const subscriptions = t.resourcesOfType('AWS::SNS::Subscription');
  return t.resourcesOfType('AWS::SNS::Topic').map(([logicalId]) => {
    const physical = t.physical(logicalId);
    return {
      logicalId,
      name: physical.attributes.TopicName!,
      arn: physical.ref,
      subscriptions: subscriptions
        .filter(([, s]) => ResolvedTemplate.target(props(s).TopicArn) === logicalId)
        .map(([, s]) => {
          const p = props(s);
          const attributes: Record<string, string> = {};
          for (const key of ['FilterPolicy', 'FilterPolicyScope', 'RawMessageDelivery', 'RedrivePolicy']) {
            if (p[key] === undefined) continue;
            const value = t.value(p[key]);
            attributes[key] = typeof value === 'string' ? value : JSON.stringify(value);
          }
          const queueLogicalId = ResolvedTemplate.target(p.Endpoint);
          return {
            protocol: String(t.value(p.Protocol)),
            endpoint: String(t.value(p.Endpoint)),
            ...(queueLogicalId && p.Protocol === 'sqs' ? { queueLogicalId } : {}),
            attributes,
          };
        }),
    };
  });
}

function functionSettings(t: ResolvedTemplate): FunctionSettings[] {
  return t.resourcesOfType('AWS::Lambda::Function').map(([logicalId, r]) => {
    const p = props(r);
    const code = t.value(p.Code) as { S3Key?: string };
    const key = /([^/]+)\.zip$/.exec(code.S3Key ?? '')?.[1];
    if (!key) throw new TemplateError(`${logicalId}: its code is not a dist/<name>.zip artifact`);
    const handler = String(t.value(p.Handler));
    const roleLogicalId = ResolvedTemplate.target(p.Role);
    if (!roleLogicalId) throw new TemplateError(`${logicalId}: its Role is not a role of the template`);
    const variables = ((p.Environment as { Variables?: Record<string, Json> } | undefined)?.Variables ?? {}) as Record<
      string,
      Json
    >;
    return {
      key,
      logicalId,
      functionName: t.physical(logicalId).ref,
      exportName: handler.slice(handler.lastIndexOf('.') + 1),
      environment: Object.fromEntries(
        Object.entries(t.value(variables) as Record<string, Json>).map(([k, v]) => [k, String(v)]),
      ),
      literalVariables: Object.keys(variables).filter((k) => typeof variables[k] === 'string'),
      layers: ((t.value(p.Layers ?? []) as Json[]) ?? []).map(String),
      memoryMb: Number(t.value(p.MemorySize ?? LAMBDA_DEFAULTS.memoryMb)),
      timeoutS: Number(t.value(p.Timeout ?? LAMBDA_DEFAULTS.timeoutS)),
      roleLogicalId,
      roleName: t.physical(roleLogicalId).ref,
    };
  });
}

function functionKeyOf(functions: FunctionSettings[], v: Json, where: string): string {
  const id = ResolvedTemplate.target(v);
  const fn = functions.find((f) => f.logicalId === id);
  if (!fn) throw new TemplateError(`${where}: ${JSON.stringify(v)} is not a function of the template`);
  return fn.key;
}

function mappingSettings(t: ResolvedTemplate, functions: FunctionSettings[]): EventSourceMappingSettings[] {
  return t.resourcesOfType('AWS::Lambda::EventSourceMapping').map(([id, r]) => {
    const p = props(r);
    const queue = ResolvedTemplate.target(p.EventSourceArn);
    if (!queue || t.resource(queue).Type !== 'AWS::SQS::Queue')
      throw new TemplateError(`${id}: the local stack runs SQS event sources only`);
    const scaling = t.value(p.ScalingConfig ?? {}) as { MaximumConcurrency?: number };
    const types = (t.value(p.FunctionResponseTypes ?? []) as string[]) ?? [];
    return {
      queue,
      functionKey: functionKeyOf(functions, p.FunctionName, id),
      batchSize: Number(t.value(p.BatchSize ?? MAPPING_DEFAULTS.batchSize)),
      batchingWindowS: Number(t.value(p.MaximumBatchingWindowInSeconds ?? MAPPING_DEFAULTS.batchingWindowS)),
      reportBatchItemFailures: types.includes('ReportBatchItemFailures'),
      maximumConcurrency: Number(scaling.MaximumConcurrency ?? MAPPING_DEFAULTS.maximumConcurrency),
    };
  });
}

function routeSettings(t: ResolvedTemplate, functions: FunctionSettings[]): RouteSettings[] {
  return t.resourcesOfType('AWS::ApiGatewayV2::Route').map(([id, r]) => {
    const p = props(r);
    // Target: integrations/<integration id>, the integration's IntegrationUri: the function.
    const target = p.Target as { 'Fn::Join'?: [string, Json[]] } | undefined;
    const integrationId = ResolvedTemplate.target(target?.['Fn::Join']?.[1]?.[1]);
    if (!integrationId) throw new TemplateError(`${id}: its Target is not an integration of the template`);
    const integration = props(t.resource(integrationId));
    return {
      routeKey: String(t.value(p.RouteKey)),
      functionKey: functionKeyOf(functions, integration.IntegrationUri, integrationId),
      authorization: String(t.value(p.AuthorizationType ?? 'NONE')),
    };
  });
}

function scheduleSettings(t: ResolvedTemplate, functions: FunctionSettings[]): ScheduleSettings[] {
  return t.resourcesOfType('AWS::Events::Rule').flatMap(([id, r]) => {
    const p = props(r);
    if (p.ScheduleExpression === undefined) return [];
    const targets = (p.Targets ?? []) as Array<{ Arn: Json }>;
    return targets.map((target) => ({
      functionKey: functionKeyOf(functions, target.Arn, id),
      expression: String(t.value(p.ScheduleExpression)),
    }));
  });
}

export function stackSettings(t: ResolvedTemplate): StackSettings {
  const functions = functionSettings(t);
  return {
    schedules: scheduleSettings(t, functions),
    table: tableSettings(t),
    queues: queueSettings(t),
    topics: topicSettings(t),
    functions,
    mappings: mappingSettings(t, functions),
    routes: routeSettings(t, functions),
  };
}

/** The statements of a policy document, resolved, each with where it came from. */
function documentStatements(t: ResolvedTemplate, policyName: string, document: Json): SourcedStatement[] {
  const raw = (document as { Statement?: Json }).Statement;
  const list = (Array.isArray(raw) ? raw : [raw]) as PolicyStatement[];
  return list.map((s, i) => ({ statement: t.value(s) as PolicyStatement, source: `${policyName}#${s.Sid ?? i}` }));
}

/** The statements of a managed policy of the template. */
export function managedPolicyStatements(t: ResolvedTemplate, logicalId: string): SourcedStatement[] {
  return documentStatements(t, logicalId, props(t.resource(logicalId)).PolicyDocument);
}

/**
 * The identity-based statements of a role, resolved: its inline policies, and the template's managed
 * policies and AWS::IAM::Policy resources attached to it. An AWS-managed policy (outside the template)
 * cannot be read locally: it is reported in `unknownPolicies`, and grants nothing here.
 */
export function roleStatements(
  t: ResolvedTemplate,
  roleLogicalId: string,
): { statements: SourcedStatement[]; unknownPolicies: string[] } {
  const role = props(t.resource(roleLogicalId));
  const statements: SourcedStatement[] = [];
  const unknownPolicies: string[] = [];
  const add = (policyName: string, document: Json) => {
    statements.push(...documentStatements(t, policyName, document));
  };
  for (const policy of (role.Policies ?? []) as Array<{ PolicyName: Json; PolicyDocument: Json }>) {
    add(`${roleLogicalId}/${String(t.value(policy.PolicyName))}`, policy.PolicyDocument);
  }
  for (const arn of (role.ManagedPolicyArns ?? []) as Json[]) {
    const id = ResolvedTemplate.target(arn);
    const managed = id ? t.template.Resources[id] : undefined;
    if (managed?.Type === 'AWS::IAM::ManagedPolicy') add(id!, props(managed).PolicyDocument);
    else unknownPolicies.push(String(t.value(arn)));
  }
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy', 'AWS::IAM::RolePolicy']) {
    for (const [id, r] of t.resourcesOfType(type)) {
      const p = props(r);
      const roles = (type === 'AWS::IAM::RolePolicy' ? [p.RoleName] : ((p.Roles ?? []) as Json[])).map((x) =>
        ResolvedTemplate.target(x),
      );
      if (roles.includes(roleLogicalId)) add(id, p.PolicyDocument);
    }
  }
  return { statements, unknownPolicies };
}

/**
 * The settings of the local stage with the parameters' defaults, for what needs them without running the
 * stack (the bench, the CLI's help); queue URLs name no real emulator.
 */
export function localStageSettings(template: Template = loadTemplate().template): StackSettings {
  return stackSettings(
    new ResolvedTemplate(template, {
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      stackName: `${SERVICE}-${LOCAL_STAGE}`,
      sqsEndpoint: 'http://127.0.0.1',
      parameters: {},
    }),
  );
}
