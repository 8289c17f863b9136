// The callback secrets a CLI command checks signatures with: the ones the receiver it targets uses today.
// CALLBACK_SECRETS in this shell wins; a deployed stage's come from its SSM parameter (the SSM client is
// loaded only then); the local stack's demo key is known, other local secrets must be given the same way
// the stack was given them. No secret is ever printed.
import { parseSecrets, type SecretsByAppKey } from '../lib/signature/secrets.ts';
import { DEFAULT_SECRETS } from '../devkit/local/demo-secrets.ts';
import { SERVICE } from '../devkit/local/deployed-settings.ts';
import { errorSentence } from '../lib/text.ts';
import { TargetError, type Target } from '../devkit/local/target.ts';
import { awsClientSettings } from '../lib/aws/env-client-settings.ts';
import { cliIo } from './io.ts';

/** The parameter serverless.yml names by default (`callbackSecretsParam`). */
export function defaultSecretsParam(
  stage: string,
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
): string {
  return `/${env.CALLBACKS_SERVICE_NAME ?? SERVICE}/${stage}/callback-secrets`;
}

export interface SecretsSource {
  /** Where they come from, for messages. */
  describe: string;
  load(): Promise<SecretsByAppKey>;
}

export function secretsFor(
  target: Target,
  opts: { secretsParam?: string },
  env: Readonly<Record<string, string | undefined>> = cliIo().env,
): SecretsSource {
  if (env.CALLBACK_SECRETS !== undefined && env.CALLBACK_SECRETS.trim() !== '') {
    const text = env.CALLBACK_SECRETS;
    return { describe: 'CALLBACK_SECRETS', load: async () => parseSecrets(text, 'CALLBACK_SECRETS') };
  }
  const param = opts.secretsParam ?? (target.stage ? defaultSecretsParam(target.stage, env) : undefined);
  if (param) {
    return { describe: `SSM parameter ${param}`, load: () => readParameter(param, target.region) };
  }
  if (target.kind === 'local' && (target.local?.secretsSource ?? 'default') === 'default') {
    return {
      describe: 'the local demo key',
      load: async () => parseSecrets(JSON.stringify(DEFAULT_SECRETS), 'the demo secrets'),
    };
  }
  const why =
    target.kind === 'local'
      ? 'the local stack was started with its own CALLBACK_SECRETS'
      : `${target.describe} names no stage`;
  return {
    describe: 'no secrets',
    load: async () => {
      throw new TargetError(
        `${why}: set the same CALLBACK_SECRETS for this command, or name the SSM parameter with --secrets-param`,
      );
    },
  };
}

async function readParameter(name: string, region: string): Promise<SecretsByAppKey> {
  const { SSMClient, GetParameterCommand } = await import('@aws-sdk/client-ssm');
  const ssm = new SSMClient({ ...awsClientSettings('SSM', cliIo().env), region, maxAttempts: 3 });
  try {
    const res = await ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    const value = res.Parameter?.Value;
    if (!value) throw new Error('the parameter has no value');
    return parseSecrets(value, `SSM parameter ${name}`);
  } catch (err) {
    throw new TargetError(
      `cannot read the callback secrets from SSM parameter ${name} in ${region}: ${errorSentence(err)}`,
    );
  } finally {
    ssm.destroy();
  }
}
