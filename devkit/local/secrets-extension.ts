// The AWS Parameters and Secrets Lambda Extension, as the local stack runs it for a function whose template
// gives it that layer: an HTTP endpoint on 127.0.0.1 that answers GET /systemsmanager/parameters/get the way
// the extension does, with the parameter read under the function's role. Deployed, the extension calls
// ssm:GetParameter with the role's credentials; here the same action is checked against the role's
// statements, and a refusal comes back as the extension passes SSM's on (HTTP 400 naming
// AccessDeniedException). The parameter's value is the local secrets' JSON: no Parameter Store here.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IamSession } from './iam/enforce.ts';
import { errorSentence } from '../../lib/text.ts';

export interface SecretsExtensionConfig {
  /** The function whose role reads the parameter (its key in the IAM session). */
  functionKey: string;
  /** The IAM checks in force (none: every read is allowed). */
  iam: IamSession | undefined;
  /** Name -> value of the parameters it serves. */
  parameters: ReadonlyMap<string, string>;
  region: string;
  accountId: string;
}

/** The token the function must send (its AWS_SESSION_TOKEN), as the extension requires. */
export const LOCAL_SESSION_TOKEN = 'local-session-token';

/** The extension's layer, recognised by its name in the template's Layers. */
export const isSecretsExtensionLayer = (arn: string) => /parameters-and-secrets-lambda-extension/i.test(arn);

/** The extension's answer to one request: status and body. */
function answerTo(config: SecretsExtensionConfig | undefined, req: IncomingMessage): { status: number; body: string } {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'GET' || url.pathname !== '/systemsmanager/parameters/get')
    return { status: 404, body: 'not found' };
  if (req.headers['x-aws-parameters-secrets-token'] !== LOCAL_SESSION_TOKEN)
    return { status: 401, body: 'unauthorized' };
  if (!config) return { status: 503, body: 'no local stack is running' };
  const name = url.searchParams.get('name') ?? '';
  const arn = `arn:aws:ssm:${config.region}:${config.accountId}:parameter${name.startsWith('/') ? '' : '/'}${name}`;
  const principal = config.iam?.principal(config.functionKey);
  if (principal) {
    try {
      config.iam!.authorize(principal, 'ssm:GetParameter', arn);
    } catch (err) {
      return { status: 400, body: errorSentence(err) };
    }
  }
  const value = config.parameters.get(name);
  if (value === undefined) return { status: 400, body: `ParameterNotFound: ${name}` };
  const parameter = { ARN: arn, Name: name, Type: 'SecureString', Value: value, Version: 1, DataType: 'text' };
  return { status: 200, body: JSON.stringify({ Parameter: parameter }) };
}

export interface SecretsExtension {
  port: number;
  /** What it serves from now on (undefined: nothing, every request gets 503). */
  serve(config: SecretsExtensionConfig | undefined): void;
  stop(): Promise<void>;
}

/**
 * The extension of one local stack, on a free port of 127.0.0.1 (the functions that read it get the port in
 * their environment): each stack its own, so that two stacks in one process serve their own secrets.
 */
export function startSecretsExtension(): Promise<SecretsExtension> {
  let config: SecretsExtensionConfig | undefined;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const { status, body } = answerTo(config, req);
    res.writeHead(status, { 'content-type': status === 200 ? 'application/json' : 'text/plain' });
    res.end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      // It keeps no process alive: a stack left running by a test does not hold the test run open.
      server.unref();
      resolve({
        port: (server.address() as AddressInfo).port,
        serve: (next) => {
          config = next;
        },
        stop: () =>
          new Promise<void>((done) => {
            config = undefined;
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
