// The settings of a client of a deployed stage's services, from the run's environment (cli/io.ts) rather
// than from the process's, which the SDK would read by itself: an endpoint set for the service or for every
// service, and keys set in the environment. What is not set is left to the SDK's own chain (a profile, SSO,
// a role), as before. Run by bin/callbacks.js the run's environment is the process's: the same result.
import { cliIo } from './io.ts';

/** The part of a client's configuration the environment decides. */
export interface AwsClientSettings {
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * `service` as the SDK names its endpoint variable (DYNAMODB, SQS, SNS, SSM, STS, CLOUDWATCH, LAMBDA,
 * CLOUDFORMATION): AWS_ENDPOINT_URL_<service>, then AWS_ENDPOINT_URL.
 */
export function awsClientSettings(service: string, env = cliIo().env): AwsClientSettings {
  const settings: AwsClientSettings = {};
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
