// The AWS Parameters and Secrets Lambda Extension, as the local stack runs it for a function whose template
// gives it that layer: an HTTP endpoint on 127.0.0.1 that answers GET /systemsmanager/parameters/get the way
// the extension does, with the parameter read under the function's role. Deployed, the extension calls
// ssm:GetParameter with the role's credentials; here the same action is checked against the role's
// statements, and a refusal comes back as the extension passes SSM's on (HTTP 400 naming
// AccessDeniedException). The parameter's value is the local secrets' JSON: no Parameter Store here.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IamSession } from './iam/enforce.ts';
import { errorSentence } from '../text.ts';

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

let config: SecretsExtensionConfig | undefined;
let started: Promise<number> | undefined;

/** What the extension serves from now on: the running stack's parameters and checks (undefined: nothing). */
export function serveSecrets(next: SecretsExtensionConfig | undefined): void {
  config = next;
}

/** The extension's answer to one request: status and body. */
function answerTo(req: IncomingMessage): { status: number; body: string } {
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

function answerRequest(req: IncomingMessage, res: ServerResponse): void {
  const { status, body } = answerTo(req);
  res.writeHead(status, { 'content-type': status === 200 ? 'application/json' : 'text/plain' });
  res.end(body);
}

/**
 * The extension's port. One endpoint per process, started on first use and never closed (it keeps no
 * process alive): the function that reads it is loaded once per process with this port in its environment.
 */
export function secretsExtensionPort(): Promise<number> {
  started ??= new Promise<number>((resolve, reject) => {
    const server: Server = createServer(answerRequest);
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.unref();
      resolve((server.address() as AddressInfo).port);
    });
  });
  return started;
}
