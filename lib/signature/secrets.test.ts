import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.ts';
import { extensionSecrets, jsonSecrets, parseSecrets, SecretsUnavailableError, signingSecret } from './secrets.ts';

const SECRET = 's3cr3t-value-that-must-not-leak';

/** Plays the AWS Parameters and Secrets Lambda Extension: GET /systemsmanager/parameters/get. */
class FakeExtension {
  server: Server;
  requests: IncomingMessage[] = [];
  /** What the next requests get: a parameter value, or a status with a body. */
  answer: { value: string } | { status: number; body: string } | 'hang' = { value: '{}' };
  constructor() {
    this.server = createServer((req, res) => {
      this.requests.push(req);
      const answer = this.answer;
      if (answer === 'hang') return;
      if ('value' in answer) {
        const url = new URL(req.url ?? '/', 'http://x');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            Parameter: { Name: url.searchParams.get('name'), Type: 'SecureString', Value: answer.value, Version: 1 },
          }),
        );
      } else {
        res.writeHead(answer.status);
        res.end(answer.body);
      }
    });
  }
  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function recordingLogger() {
  const lines: string[] = [];
  const push = (level: string) => (event: string, fields?: Record<string, unknown>) => {
    lines.push(JSON.stringify({ level, event, ...fields }));
  };
  const logger: Logger = { debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
  return { logger, lines };
}

describe('parseSecrets', () => {
  test('reads lists and single strings per appKey', () => {
    const secrets = parseSecrets('{"a":["x","y"],"b":"z"}', 'CALLBACK_SECRETS');
    expect(secrets.get('a')).toEqual(['x', 'y']);
    expect(secrets.get('b')).toEqual(['z']);
    expect(secrets.get('c')).toBeUndefined();
  });

  test.each([
    ['not JSON', `{"a":["${SECRET}"`],
    ['not an object', `["${SECRET}"]`],
    ['an empty list', '{"a":[]}'],
    ['a non-string secret', `{"a":["${SECRET}", 5]}`],
    ['an empty secret', `{"a":["${SECRET}", ""]}`],
  ])('%s is refused without quoting the text', (_name, text) => {
    let caught: unknown;
    try {
      parseSecrets(text, 'CALLBACK_SECRETS');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SecretsUnavailableError);
    expect((caught as Error).message).toContain('CALLBACK_SECRETS');
    expect((caught as Error).message).not.toContain(SECRET);
  });
});

describe('jsonSecrets', () => {
  test('a malformed CALLBACK_SECRETS fails each get, never at construction', async () => {
    const provider = jsonSecrets('{oops', 'CALLBACK_SECRETS');
    await expect(provider.get()).rejects.toBeInstanceOf(SecretsUnavailableError);
    await expect(provider.get()).rejects.toThrow('CALLBACK_SECRETS is not valid JSON.');
  });
});

describe('extensionSecrets against a fake extension', () => {
  const extension = new FakeExtension();
  let port = 0;
  let clock = 1_000_000;
  const now = () => clock;

  beforeAll(async () => {
    port = await extension.start();
  });
  afterAll(() => extension.stop());
  beforeEach(() => {
    extension.requests = [];
    extension.answer = { value: '{}' };
  });

  const provider = (logger: Logger, overrides: { sessionToken?: string } = {}) =>
    extensionSecrets({
      paramName: '/rtc/callback-secrets',
      port,
      host: '127.0.0.1',
      sessionToken: () => ('sessionToken' in overrides ? overrides.sessionToken : 'session-token-1'),
      refreshMs: 300_000,
      retryAfterFailureMs: 30_000,
      timeoutMs: 300,
      now,
      logger,
    });

  test('by default the extension is reached at localhost, the name AWS documents, not a fixed address', async () => {
    extension.answer = { value: JSON.stringify({ 'demo-app': [SECRET] }) };
    const secrets = extensionSecrets({
      paramName: '/rtc/callback-secrets',
      port,
      sessionToken: () => 'session-token-1',
      refreshMs: 300_000,
      now,
      logger: recordingLogger().logger,
    });
    expect((await secrets.get()).get('demo-app')).toEqual([SECRET]);
    expect(extension.requests.map((r) => r.headers.host)).toEqual([`localhost:${port}`]);
  });

  test('asks for the parameter with decryption and the session token, then caches it', async () => {
    extension.answer = { value: JSON.stringify({ 'demo-app': [SECRET] }) };
    const { logger, lines } = recordingLogger();
    const secrets = provider(logger);
    expect((await secrets.get()).get('demo-app')).toEqual([SECRET]);
    expect((await secrets.get()).get('demo-app')).toEqual([SECRET]);
    expect(extension.requests).toHaveLength(1);
    const req = extension.requests[0]!;
    const url = new URL(req.url ?? '', 'http://x');
    expect(url.pathname).toBe('/systemsmanager/parameters/get');
    expect(url.searchParams.get('name')).toBe('/rtc/callback-secrets');
    expect(url.searchParams.get('withDecryption')).toBe('true');
    expect(req.headers['x-aws-parameters-secrets-token']).toBe('session-token-1');
    expect(lines.join('\n')).not.toContain(SECRET);
  });

  test('reads again once the refresh period has passed, so a rotation needs no redeploy', async () => {
    extension.answer = { value: JSON.stringify({ 'demo-app': ['old'] }) };
    const secrets = provider(recordingLogger().logger);
    expect((await secrets.get()).get('demo-app')).toEqual(['old']);
    extension.answer = { value: JSON.stringify({ 'demo-app': ['old', 'new'] }) };
    clock += 299_999;
    expect((await secrets.get()).get('demo-app')).toEqual(['old']);
    clock += 1;
    expect((await secrets.get()).get('demo-app')).toEqual(['old', 'new']);
    expect(extension.requests).toHaveLength(2);
  });

  test('a failed refresh keeps the last good secrets, warns without secrets, and retries later', async () => {
    extension.answer = { value: JSON.stringify({ 'demo-app': [SECRET] }) };
    const { logger, lines } = recordingLogger();
    const secrets = provider(logger);
    await secrets.get();
    clock += 300_000;
    extension.answer = { status: 500, body: `internal error ${SECRET}` };
    expect((await secrets.get()).get('demo-app')).toEqual([SECRET]);
    const warning = lines.map((l) => JSON.parse(l)).find((l) => l.event === 'callback_secrets_refresh_failed');
    expect(warning).toMatchObject({ level: 'warn', reason: expect.stringContaining('HTTP 500') });
    // Within the retry delay the extension is not asked again; after it, it is.
    clock += 29_999;
    await secrets.get();
    expect(extension.requests).toHaveLength(2);
    clock += 1;
    extension.answer = { value: JSON.stringify({ 'demo-app': ['rotated'] }) };
    expect((await secrets.get()).get('demo-app')).toEqual(['rotated']);
    expect(lines.join('\n')).not.toContain(SECRET);
  });

  test('a failed first read rejects with a clear error (no secret in it) and the next call tries again', async () => {
    extension.answer = { status: 400, body: `bad ${SECRET}` };
    const secrets = provider(recordingLogger().logger);
    const error = await secrets.get().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretsUnavailableError);
    expect((error as Error).message).toMatch(/SSM parameter \/rtc\/callback-secrets.*HTTP 400/);
    expect((error as Error).message).not.toContain(SECRET);
    extension.answer = { value: '{"demo-app":["x"]}' };
    expect((await secrets.get()).get('demo-app')).toEqual(['x']);
  });

  test('a parameter value that is not the expected JSON is refused without quoting it', async () => {
    extension.answer = { value: `not json ${SECRET}` };
    const error = await provider(recordingLogger().logger)
      .get()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretsUnavailableError);
    expect((error as Error).message).toContain('is not valid JSON');
    expect((error as Error).message).not.toContain(SECRET);
  });

  test('an extension answer that is not JSON is refused without quoting it', async () => {
    extension.answer = { status: 200, body: `<html>${SECRET}` };
    const error = await provider(recordingLogger().logger)
      .get()
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('not JSON');
    expect((error as Error).message).not.toContain(SECRET);
  });

  test('an extension that does not answer in time is a failure, not a hang', async () => {
    extension.answer = 'hang';
    const error = await provider(recordingLogger().logger)
      .get()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretsUnavailableError);
    expect((error as Error).message).toContain('did not answer in time');
  });

  test('no session token: a clear error and no request', async () => {
    const error = await provider(recordingLogger().logger, { sessionToken: undefined })
      .get()
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('AWS_SESSION_TOKEN');
    expect(extension.requests).toHaveLength(0);
  });

  test('concurrent calls share one read', async () => {
    extension.answer = { value: '{"a":["x"]}' };
    const secrets = provider(recordingLogger().logger);
    await Promise.all([secrets.get(), secrets.get(), secrets.get()]);
    expect(extension.requests).toHaveLength(1);
  });

  test('a closed port is a failure with the connection error named', async () => {
    const closed = new FakeExtension();
    const closedPort = await closed.start();
    await closed.stop();
    const secrets = extensionSecrets({
      paramName: 'p',
      port: closedPort,
      host: '127.0.0.1',
      sessionToken: () => 't',
      refreshMs: 1000,
      now,
      logger: recordingLogger().logger,
    });
    await expect(secrets.get()).rejects.toThrow(/ECONNREFUSED/);
  });
});

test('a sender signs with the first secret of an appKey: a rotation lists the new one first', () => {
  const secrets = parseSecrets('{"app":["new-secret","old-secret"],"other":"only"}', 'test');
  expect(signingSecret(secrets.get('app')!)).toBe('new-secret');
  expect(signingSecret(secrets.get('other')!)).toBe('only');
});
