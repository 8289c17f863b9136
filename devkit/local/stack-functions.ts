// The template's functions, run in this process: each deployed handler built with its environment from the
// template (devkit/local/handlers.ts), its secrets served by the secrets extension of its layer (one per stack),
// and invoked as Lambda invokes it, with its time-out and memory size and under its role
// (devkit/local/lambda-runtime.ts).
import type { Logger } from '../../lib/log.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_CREDENTIALS, LOCAL_REGION } from './deployed-settings.ts';
import { buildDeployedHandlers } from './handlers.ts';
import type { IamSession } from './iam/enforce.ts';
import type { LocalInvoke } from './lambda-invoke.ts';
import { localFunction } from './lambda-runtime.ts';
import { LOCAL_SESSION_TOKEN, isSecretsExtensionLayer, startSecretsExtension } from './secrets-extension.ts';
import type { FunctionSettings } from './stack-template.ts';

export interface LocalFunctionsOptions {
  functions: readonly FunctionSettings[];
  /** Where the plain values of the template may be overridden from (the shell's environment). */
  env: NodeJS.ProcessEnv;
  /** Variables set on every function beside the template's (each function reads only its own). */
  extraEnvironment?: Readonly<Record<string, string>>;
  /** The secrets, as CALLBACK_SECRETS holds them. */
  secretsJson: string;
  sqsEndpoint: string;
  dynamoEndpoint: string;
  /** The Firehose stand-in's, when the template has an archive stream. */
  firehoseEndpoint?: string | undefined;
  /** The IAM checks, when they are enforced. */
  iam: IamSession | undefined;
  log: Logger;
}

export interface LocalFunctions {
  /** Each function of the template, by key, ready to be invoked. */
  invokers: Record<string, LocalInvoke>;
  /** Closes what the functions were given (the secrets extension). */
  stop(): Promise<void>;
}

export async function startLocalFunctions(opts: LocalFunctionsOptions): Promise<LocalFunctions> {
  const { env, secretsJson: secrets } = opts;
  const readsExtension = (fn: LocalFunctionsOptions['functions'][number]) =>
    fn.environment.CALLBACK_SECRETS_PARAM !== undefined && fn.layers.some(isSecretsExtensionLayer);
  const extension = opts.functions.some(readsExtension) ? await startSecretsExtension() : undefined;
  const parameters = new Map<string, string>();
  const handlers = buildDeployedHandlers(
    {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_SQS: opts.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: opts.dynamoEndpoint,
      AWS_ENDPOINT_URL_SNS: opts.sqsEndpoint,
      // What a function sends the secrets extension, as on Lambda.
      AWS_SESSION_TOKEN: LOCAL_SESSION_TOKEN,
    },
    opts.functions.map((fn) => {
      const environment = { ...fn.environment, ...opts.extraEnvironment };
      // A plain value of the template may be tried out from the shell; references are the stack's own.
      for (const name of fn.literalVariables) {
        const own = env[name];
        if (own !== undefined && own.trim() !== '') environment[name] = own;
      }
      const parameter = environment.CALLBACK_SECRETS_PARAM;
      if (parameter !== undefined && extension && fn.layers.some(isSecretsExtensionLayer)) {
        // The extension of its layer, run by the stack: the parameter holds the local secrets, read under
        // the function's role.
        environment.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT = String(extension.port);
        parameters.set(parameter, secrets);
        extension.serve({
          functionKey: fn.key,
          iam: opts.iam,
          parameters,
          region: LOCAL_REGION,
          accountId: LOCAL_ACCOUNT_ID,
        });
      } else if (parameter !== undefined) {
        // No extension to read it with: the secrets themselves, in the variable the ingest reads instead.
        delete environment.CALLBACK_SECRETS_PARAM;
        environment.CALLBACK_SECRETS = secrets;
      }
      return { key: fn.key, exportName: fn.exportName, environment };
    }),
    opts.iam,
    {
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      // fauxqs serves SNS and S3 on the SQS port.
      endpoints: {
        dynamodb: opts.dynamoEndpoint,
        sqs: opts.sqsEndpoint,
        sns: opts.sqsEndpoint,
        s3: opts.sqsEndpoint,
        ...(opts.firehoseEndpoint ? { firehose: opts.firehoseEndpoint } : {}),
      },
    },
  );
  const invokers = Object.fromEntries(
    opts.functions.map((fn) => [
      fn.key,
      localFunction({
        settings: fn,
        handler: handlers[fn.key]!,
        log: opts.log,
        ...(opts.iam ? { iam: opts.iam } : {}),
        logGroupName: `/aws/lambda/${fn.functionName}`,
        region: LOCAL_REGION,
        accountId: LOCAL_ACCOUNT_ID,
      }),
    ]),
  );
  return { invokers, stop: async () => extension?.stop() };
}
