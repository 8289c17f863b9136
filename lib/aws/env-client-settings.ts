// The settings of a client of a deployed stage's services that the run's environment decides (cli/io.ts): the
// region, an endpoint set for the service or for every service, and keys, read from the environment the run was
// given rather than from process.env, which the SDK would read by itself: a command run in a test's process
// gets its own. What is not set is left to the SDK's own chain (a profile, SSO, a role). Run by
// bin/callbacks.js, the run's environment is the process's: the same result as the SDK's own reading.

/** The part of a client's configuration the environment decides. */
export interface AwsClientSettings {
  region?: string;
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * `service` as the SDK names its endpoint variable (DYNAMODB, SQS, SNS, SSM, STS, CLOUDWATCH, LAMBDA,
 * CLOUDFORMATION): AWS_ENDPOINT_URL_<service>, then AWS_ENDPOINT_URL; AWS_REGION; AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
 */
export function awsClientSettings(
  service: string,
  env: Readonly<Record<string, string | undefined>>,
): AwsClientSettings {
  const settings: AwsClientSettings = {};
  if (env.AWS_REGION) settings.region = env.AWS_REGION;
  const ignored = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === 'true';
  const endpoint = ignored ? undefined : env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL;
  if (endpoint) settings.endpoint = endpoint;
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN } = env;
  if (accessKeyId && secretAccessKey) {
    settings.credentials = {
      accessKeyId,
      secretAccessKey,
      ...(AWS_SESSION_TOKEN ? { sessionToken: AWS_SESSION_TOKEN } : {}),
    };
  }
  return settings;
}
