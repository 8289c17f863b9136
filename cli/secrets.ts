// The callback secrets a CLI command uses: the ones the receiver it targets uses today, to check signatures
// (`quarantine apply`) or to sign as the platform does (`send`, `emulate`, `pull`). CALLBACK_SECRETS in this
// shell wins; a deployed stage's come from its SSM parameter (the SSM client is loaded only then); the local
// stack's demo key is known, other local secrets must be given the same way the stack was given them. A secret
// is never taken on the command line (it would stay in the shell's history and show in the process list), and
// never printed.
import type { Command } from 'commander';
import { parseSecrets, signingSecret, type SecretsByAppKey } from '../lib/signature/secrets.ts';
import { DEFAULT_SECRETS } from '../devkit/local/demo-secrets.ts';
import { SERVICE } from '../devkit/local/deployed-settings.ts';
import type { LocalStackInfo } from '../devkit/local/stack-file.ts';
import { errorSentence } from '../lib/text.ts';
import { TargetError, type Target } from '../devkit/local/target.ts';
import { awsClientSettings } from '../lib/aws/env-client-settings.ts';
import { CliError } from './inspect.ts';
import { cliIo } from './io.ts';

type Env = Readonly<Record<string, string | undefined>>;

const LOCAL_DEMO = "the local stack's demo secrets";

/** The parameter serverless.yml names by default (`callbackSecretsParam`). */
export function defaultSecretsParam(stage: string, env: Env = cliIo().env): string {
  return `/${env.CALLBACKS_SERVICE_NAME ?? SERVICE}/${stage}/callback-secrets`;
}

export interface SecretsSource {
  /** Where they come from, for messages. */
  describe: string;
  load(): Promise<SecretsByAppKey>;
}

/** Where the secrets of a receiver are found, in the order they are looked for. */
interface SecretsPlaces {
  /** A deployed stage: its parameter (`--secrets-param`, else the stage's default one) in `region`. */
  stage?: string | undefined;
  region?: string | undefined;
  secretsParam?: string | undefined;
  /** A local stack: its demo key is known; secrets of its own are not. */
  local?: Pick<LocalStackInfo, 'secretsSource'> | null;
  /** Why none is known when none of the above is given, and what to do: one sentence. */
  none: string;
}

function secretsSource(places: SecretsPlaces, env: Env): SecretsSource {
  if (env.CALLBACK_SECRETS !== undefined && env.CALLBACK_SECRETS.trim() !== '') {
    const text = env.CALLBACK_SECRETS;
    return { describe: 'CALLBACK_SECRETS', load: async () => parseSecrets(text, 'CALLBACK_SECRETS') };
  }
  const param = places.secretsParam ?? (places.stage ? defaultSecretsParam(places.stage, env) : undefined);
  if (param) {
    const region = places.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    if (!region) throw new CliError(`reading SSM parameter ${param} needs a region: pass --region or set AWS_REGION`);
    return { describe: `SSM parameter ${param}`, load: () => readParameter(param, region) };
  }
  if (places.local && (places.local.secretsSource ?? 'default') === 'default') {
    return {
      describe: LOCAL_DEMO,
      load: async () => parseSecrets(JSON.stringify(DEFAULT_SECRETS), 'the demo secrets'),
    };
  }
  return {
    describe: 'no secrets',
    load: async () => {
      throw new TargetError(places.none);
    },
  };
}

/** The secrets `quarantine apply` checks signatures with: those of the receiver of `target`. */
export function secretsFor(target: Target, opts: { secretsParam?: string }, env: Env = cliIo().env): SecretsSource {
  const why =
    target.kind === 'local'
      ? 'the local stack was started with its own CALLBACK_SECRETS'
      : `${target.describe} names no stage`;
  return secretsSource(
    {
      stage: target.stage ?? undefined,
      region: target.region,
      secretsParam: opts.secretsParam,
      local: target.kind === 'local' ? (target.local ?? {}) : null,
      none: `${why}: set the same CALLBACK_SECRETS for this command, or name the SSM parameter with --secrets-param`,
    },
    env,
  );
}

/** Where a command that signs callbacks finds its secrets: the options it takes to name them. */
export interface SenderSecretsOptions {
  stage?: string;
  region?: string;
  secretsParam?: string;
}

/**
 * The secrets a command signs with as the platform does, for the receiver it posts to: CALLBACK_SECRETS, else the
 * parameter of `--stage` (or `--secrets-param`), else the demo key of a local stack that uses it (`local`, when
 * the callbacks go to the local stack of this folder).
 */
export function senderSecrets(
  opts: SenderSecretsOptions,
  local: LocalStackInfo | null,
  env: Env = cliIo().env,
): SecretsSource {
  const none = local
    ? 'the local stack was started with its own CALLBACK_SECRETS: set the same CALLBACK_SECRETS for this command'
    : 'set CALLBACK_SECRETS, or name the stage whose secrets parameter holds them (--stage, or --secrets-param)';
  return secretsSource({ ...opts, local, none }, env);
}

/** The secret `appKey`'s callbacks are signed with (the newest of a rotation), or a sentence saying none is known. */
export async function secretToSign(source: SecretsSource, appKey: string): Promise<string> {
  let secrets: SecretsByAppKey;
  try {
    secrets = await source.load();
  } catch (err) {
    throw new CliError(`no secret for appKey "${appKey}": ${errorSentence(err, { bare: true })}`);
  }
  const forAppKey = secrets.get(appKey);
  if (!forAppKey?.length) {
    const demo = source.describe === LOCAL_DEMO ? ': set CALLBACK_SECRETS to sign with others' : '';
    throw new CliError(`no secret for appKey "${appKey}" in ${source.describe}${demo}`);
  }
  return signingSecret(forAppKey);
}

/** The options a signing command takes to find its secrets, and the refusal of a secret typed on the command line. */
export function withSenderSecrets(cmd: Command): Command {
  return cmd
    .option('--stage <stage>', "sign with the secrets of this deployed stage's parameter (CALLBACK_SECRETS wins)")
    .option('--region <region>', 'AWS region of that stage (default: AWS_REGION)')
    .option(
      '--secrets-param <name>',
      'SSM parameter holding the secrets (default with --stage: /<service>/<stage>/callback-secrets)',
    )
    .addOption(refusedSecretOption(cmd, 'set CALLBACK_SECRETS, or name the stage (--stage) whose parameter holds it'));
}

/**
 * A `--secret` of earlier versions, hidden: refused with `instead`, its value never repeated (commander's own
 * refusal of an unknown option would not say why).
 */
export function refusedSecretOption(cmd: Command, instead: string) {
  cmd.hook('preAction', (_cmd, action) => {
    if (action.opts().secret !== undefined)
      throw new CliError(
        `a secret is not taken on the command line (the shell history and the process list would keep it): ${instead}`,
      );
  });
  return cmd.createOption('--secret <secret>').hideHelp();
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
