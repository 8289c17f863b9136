// What `callbacks status` reads of a deployed stage beyond its table and queues: the age of the queue's
// oldest message (CloudWatch), the ingest's signature settings (its function configuration) and the stage's
// alarms in alarm. The CloudWatch and Lambda clients are loaded only here, only for a stage.
import { SERVICE, resourceNames } from '../devkit/local/deployed-settings.ts';
import { awsClientSettings } from '../lib/aws/env-client-settings.ts';
import { cliIo } from './io.ts';

/** How far back the queue-age metric is read: SQS publishes it every minute, sometimes a few minutes late. */
const QUEUE_AGE_WINDOW_MS = 15 * 60_000;

/** osls names a function `<service>-<stage>-<function>`; infra/alarms.yml an alarm `<service>-<stage>-...`. */
export const stageFunctionName = (stage: string, fn: string, service: string = SERVICE) => `${service}-${stage}-${fn}`;
export const stageAlarmPrefix = (stage: string, service: string = SERVICE) => `${service}-${stage}-`;

export interface IngestSettings {
  signatureMode: string | null;
  /** The allowed source ranges; empty when every address is. */
  allowedSources: string[];
}

export interface FiringAlarm {
  name: string;
  /** When it went into alarm, epoch ms. */
  since: number | null;
  reason: string;
}

export interface StageInsight {
  /** Seconds, the latest CloudWatch datapoint of ApproximateAgeOfOldestMessage, or null when none is recent. */
  oldestMessageAgeS(): Promise<number | null>;
  ingestSettings(): Promise<IngestSettings>;
  alarmsInAlarm(): Promise<FiringAlarm[]>;
  close(): void;
}

export async function stageInsight(
  stage: string,
  region: string,
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
  now: () => number = Date.now,
): Promise<StageInsight> {
  const { CloudWatchClient, DescribeAlarmsCommand, GetMetricStatisticsCommand } = await import(
    '@aws-sdk/client-cloudwatch'
  );
  const { LambdaClient, GetFunctionConfigurationCommand } = await import('@aws-sdk/client-lambda');
  const service = env.CALLBACKS_SERVICE_NAME ?? SERVICE;
  const cloudwatch = new CloudWatchClient({ ...awsClientSettings('CLOUDWATCH', env), region, maxAttempts: 3 });
  const lambda = new LambdaClient({ ...awsClientSettings('LAMBDA', env), region, maxAttempts: 3 });
  return {
    async oldestMessageAgeS() {
      const end = now();
      const res = await cloudwatch.send(
        new GetMetricStatisticsCommand({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: resourceNames(stage, service).queue }],
          StartTime: new Date(end - QUEUE_AGE_WINDOW_MS),
          EndTime: new Date(end),
          Period: 60,
          Statistics: ['Maximum'],
        }),
      );
      const latest = (res.Datapoints ?? [])
        .filter((d) => d.Timestamp && d.Maximum !== undefined)
        .sort((a, b) => b.Timestamp!.getTime() - a.Timestamp!.getTime())[0];
      return latest ? latest.Maximum! : null;
    },
    async ingestSettings() {
      const res = await lambda.send(
        new GetFunctionConfigurationCommand({ FunctionName: stageFunctionName(stage, 'ingest', service) }),
      );
      const vars = res.Environment?.Variables ?? {};
      const ranges = vars.ALLOWED_SOURCE_CIDRS ?? '';
      return {
        signatureMode: vars.SIGNATURE_MODE ?? null,
        allowedSources: ranges
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean),
      };
    },
    async alarmsInAlarm() {
      const firing: FiringAlarm[] = [];
      let token: string | undefined;
      do {
        const res = await cloudwatch.send(
          new DescribeAlarmsCommand({
            AlarmNamePrefix: stageAlarmPrefix(stage, service),
            StateValue: 'ALARM',
            MaxRecords: 100,
            NextToken: token,
          }),
        );
        for (const a of [...(res.MetricAlarms ?? []), ...(res.CompositeAlarms ?? [])]) {
          firing.push({
            name: a.AlarmName ?? '?',
            since: a.StateUpdatedTimestamp?.getTime() ?? null,
            reason: a.StateReason ?? '',
          });
        }
        token = res.NextToken;
      } while (token);
      return firing;
    },
    close() {
      cloudwatch.destroy();
      lambda.destroy();
    },
  };
}
