// CloudFormation's intrinsic functions in the packaged template (devkit/local/template.ts), evaluated for the
// local stage: Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::If and the conditions, each
// resolved to the names and ARNs the template's resources have on the local stack. What the stack is built
// from is read out of it by devkit/local/stack-template.ts.
import type { Template, TemplateResource } from './template.ts';

export interface LocalAccount {
  region: string;
  accountId: string;
  stackName: string;
  /** Where the local SQS lives: queue URLs are built on it. */
  sqsEndpoint: string;
  /** Values of the template's parameters for the local stage; the others take their Default. */
  parameters: Record<string, string>;
}

export type Json = unknown;

/** The names and ARNs a resource of the template has on the local stack: its Ref and its attributes. */
interface Physical {
  ref: string;
  attributes: Record<string, string>;
}

/** The id of the local HTTP API, in the ARNs of its routes (`<api>/<stage>/<method>/<path>`). */
export const LOCAL_API_ID = 'local';

/** `Ref: AWS::NoValue`: the property that holds it is left out, as CloudFormation leaves it out. */
const NO_VALUE = Symbol('AWS::NoValue');

export class TemplateError extends Error {
  override name = 'TemplateError';
}

export class ResolvedTemplate {
  readonly template: Template;
  readonly account: LocalAccount;
  private readonly physicalCache = new Map<string, Physical>();

  constructor(template: Template, account: LocalAccount) {
    this.template = template;
    this.account = account;
  }

  resource(logicalId: string): TemplateResource {
    const r = this.template.Resources[logicalId];
    if (!r) throw new TemplateError(`the template has no resource ${logicalId}`);
    return r;
  }

  /** The resources of a type whose Condition (if any) holds on the local stage. */
  resourcesOfType(type: string): Array<[string, TemplateResource]> {
    return Object.entries(this.template.Resources).filter(
      ([, r]) => r.Type === type && (r.Condition === undefined || this.condition(r.Condition)),
    );
  }

  private pseudo(name: string): string | undefined {
    const { region, accountId, stackName } = this.account;
    return {
      'AWS::Region': region,
      'AWS::AccountId': accountId,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': stackName,
      'AWS::StackId': `arn:aws:cloudformation:${region}:${accountId}:stack/${stackName}/local`,
    }[name];
  }

  parameter(name: string): string | undefined {
    if (name in this.account.parameters) return this.account.parameters[name];
    const declared = this.template.Parameters?.[name];
    return declared === undefined ? undefined : String(declared.Default ?? '');
  }

  condition(name: string): boolean {
    const expression = this.template.Conditions?.[name];
    if (expression === undefined) throw new TemplateError(`the template has no condition ${name}`);
    return this.truth(expression);
  }

  private truth(expression: Json): boolean {
    if (typeof expression === 'boolean') return expression;
    const [[fn, args]] = Object.entries(expression as Record<string, Json[]>) as [[string, Json[]]];
    switch (fn) {
      case 'Fn::Equals':
        return String(this.value(args[0])) === String(this.value(args[1]));
      case 'Fn::Not':
        return !this.truth(args[0]);
      case 'Fn::And':
        return args.every((a) => this.truth(a));
      case 'Fn::Or':
        return args.some((a) => this.truth(a));
      case 'Condition':
        return this.condition(args as unknown as string);
      default:
        throw new TemplateError(`condition function ${fn} is not supported by the local stack`);
    }
  }

  /** The local names and ARNs of a resource. */
  physical(logicalId: string): Physical {
    const cached = this.physicalCache.get(logicalId);
    if (cached) return cached;
    const r = this.resource(logicalId);
    const p = (r.Properties ?? {}) as Record<string, Json>;
    const { region, accountId, stackName } = this.account;
    const named = (key: string, fallback = `${stackName}-${logicalId}`) =>
      p[key] === undefined ? fallback : String(this.value(p[key]));
    let physical: Physical;
    switch (r.Type) {
      case 'AWS::DynamoDB::Table': {
        const name = named('TableName');
        const arn = `arn:aws:dynamodb:${region}:${accountId}:table/${name}`;
        physical = { ref: name, attributes: { Arn: arn, StreamArn: `${arn}/stream/local` } };
        break;
      }
      case 'AWS::SQS::Queue': {
        const name = named('QueueName');
        const url = new URL(`/${accountId}/${name}`, this.account.sqsEndpoint).href;
        physical = {
          ref: url,
          attributes: { Arn: `arn:aws:sqs:${region}:${accountId}:${name}`, QueueName: name, QueueUrl: url },
        };
        break;
      }
      case 'AWS::SNS::Topic': {
        const name = named('TopicName');
        const arn = `arn:aws:sns:${region}:${accountId}:${name}`;
        physical = { ref: arn, attributes: { TopicArn: arn, TopicName: name } };
        break;
      }
      case 'AWS::Logs::LogGroup': {
        const name = named('LogGroupName');
        physical = { ref: name, attributes: { Arn: `arn:aws:logs:${region}:${accountId}:log-group:${name}:*` } };
        break;
      }
      case 'AWS::Lambda::Function': {
        const name = named('FunctionName');
        physical = { ref: name, attributes: { Arn: `arn:aws:lambda:${region}:${accountId}:function:${name}` } };
        break;
      }
      case 'AWS::IAM::Role': {
        const name = named('RoleName');
        physical = { ref: name, attributes: { Arn: `arn:aws:iam::${accountId}:role/${name}`, RoleId: name } };
        break;
      }
      case 'AWS::IAM::ManagedPolicy': {
        const name = named('ManagedPolicyName');
        physical = { ref: `arn:aws:iam::${accountId}:policy/${name}`, attributes: { PolicyArn: name } };
        break;
      }
      case 'AWS::KMS::Key': {
        const id = `local-${logicalId}`;
        physical = { ref: id, attributes: { Arn: `arn:aws:kms:${region}:${accountId}:key/${id}`, KeyId: id } };
        break;
      }
      case 'AWS::KMS::Alias':
        physical = { ref: named('AliasName'), attributes: {} };
        break;
      case 'AWS::KinesisFirehose::DeliveryStream': {
        const name = named('DeliveryStreamName');
        physical = { ref: name, attributes: { Arn: `arn:aws:firehose:${region}:${accountId}:deliverystream/${name}` } };
        break;
      }
      case 'AWS::S3::Bucket': {
        // CloudFormation names a bucket without a BucketName after the stack and the resource, in lower case.
        const name = named('BucketName', `${stackName}-${logicalId}`.toLowerCase());
        physical = { ref: name, attributes: { Arn: `arn:aws:s3:::${name}`, DomainName: `${name}.s3.amazonaws.com` } };
        break;
      }
      case 'AWS::ApiGatewayV2::Api':
        physical = { ref: LOCAL_API_ID, attributes: { ApiEndpoint: 'http://127.0.0.1' } };
        break;
      default:
        physical = { ref: logicalId, attributes: { Arn: `arn:aws:local:${region}:${accountId}:${logicalId}` } };
    }
    this.physicalCache.set(logicalId, physical);
    return physical;
  }

  ref(name: string): string {
    if (name.startsWith('AWS::')) {
      const value = this.pseudo(name);
      if (value === undefined) throw new TemplateError(`pseudo parameter ${name} is not supported locally`);
      return value;
    }
    const parameter = this.parameter(name);
    if (parameter !== undefined) return parameter;
    return this.physical(name).ref;
  }

  getAtt(logicalId: string, attribute: string): string {
    const value = this.physical(logicalId).attributes[attribute];
    if (value === undefined) throw new TemplateError(`Fn::GetAtt ${logicalId}.${attribute} has no local value`);
    return value;
  }

  private sub(text: string, variables: Record<string, Json>): string {
    return text.replace(/\$\{([^}!][^}]*)\}/g, (_, name: string) => {
      if (name in variables) return String(this.value(variables[name]));
      const dot = name.indexOf('.');
      return dot > 0 && !name.startsWith('AWS::')
        ? this.getAtt(name.slice(0, dot), name.slice(dot + 1))
        : this.ref(name);
    });
  }

  /** A template value with every intrinsic function evaluated for the local stage. */
  value(v: Json): Json {
    if (Array.isArray(v)) return v.map((x) => this.value(x)).filter((x) => x !== NO_VALUE);
    if (v === null || typeof v !== 'object') return v;
    const entries = Object.entries(v as Record<string, Json>);
    if (entries.length === 1) {
      const [[key, arg]] = entries as [[string, Json]];
      switch (key) {
        case 'Ref':
          return arg === 'AWS::NoValue' ? NO_VALUE : this.ref(arg as string);
        case 'Fn::GetAtt': {
          const [id, attr] = Array.isArray(arg) ? (arg as string[]) : (arg as string).split(/\.(.*)/s);
          return this.getAtt(id!, attr!);
        }
        case 'Fn::Sub':
          return Array.isArray(arg)
            ? this.sub(arg[0] as string, arg[1] as Record<string, Json>)
            : this.sub(arg as string, {});
        case 'Fn::Join': {
          const [separator, items] = arg as [string, Json[]];
          return (this.value(items) as Json[]).map(String).join(separator);
        }
        case 'Fn::Select': {
          const [index, items] = arg as [Json, Json];
          return (this.value(items) as Json[])[Number(this.value(index))];
        }
        case 'Fn::Split': {
          const [separator, text] = arg as [string, Json];
          return String(this.value(text)).split(separator);
        }
        case 'Fn::If': {
          const [condition, yes, no] = arg as [string, Json, Json];
          return this.value(this.condition(condition) ? yes : no);
        }
      }
      if (key.startsWith('Fn::')) throw new TemplateError(`${key} is not supported by the local stack`);
    }
    return Object.fromEntries(entries.map(([k, x]) => [k, this.value(x)]).filter(([, x]) => x !== NO_VALUE));
  }

  /** The logical id a Ref or Fn::GetAtt points at (not its value): which resource is meant. */
  static target(v: Json): string | undefined {
    if (v === null || typeof v !== 'object') return undefined;
    const o = v as Record<string, Json>;
    if (typeof o.Ref === 'string') return o.Ref;
    const att = o['Fn::GetAtt'];
    if (Array.isArray(att)) return att[0] as string;
    if (typeof att === 'string') return att.split('.')[0];
    return undefined;
  }
}
