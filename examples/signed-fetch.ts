// Calling the read API from Node: a GET signed with AWS Signature Version 4 for `execute-api`, with the
// credentials of the default chain (environment, profile, SSO, container or instance role). docs/api.md
// shows this file; a test signs with it and checks the signature against AWS's published algorithm.
//
//   node examples/signed-fetch.ts \
//     https://<api-id>.execute-api.<region>.amazonaws.com '/tasks?status=upload_failed&since=1d'
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import aws4 from 'aws4';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The headers that sign a GET of `url` (path and query string included) for API Gateway. */
export function signGet(url: URL, region: string, credentials: Credentials, now = new Date()): Record<string, string> {
  const signed = aws4.sign(
    {
      method: 'GET',
      host: url.host,
      path: `${url.pathname}${url.search}`,
      service: 'execute-api',
      region,
      headers: { 'X-Amz-Date': now.toISOString().replace(/[:-]|\.\d{3}/g, '') },
    },
    credentials,
  );
  return Object.fromEntries(Object.entries(signed.headers ?? {}).map(([name, value]) => [name, String(value)]));
}

/** GETs a read API path and returns the parsed JSON answer with its status. */
export async function readApi(
  baseUrl: string,
  path: string,
  opts: { region?: string; credentials?: Credentials } = {},
): Promise<{ status: number; body: unknown }> {
  const url = new URL(path, baseUrl);
  // The region is in the API's host name (<api-id>.execute-api.<region>.amazonaws.com).
  const region = opts.region ?? /\.execute-api\.([a-z0-9-]+)\./.exec(url.host)?.[1] ?? process.env.AWS_REGION;
  if (!region) throw new Error(`no region: pass one, or use the execute-api host name (${url.host})`);
  const credentials = opts.credentials ?? (await defaultProvider()());
  // `host` is signed, and fetch sets it from the URL: it must not be sent twice.
  const { host: _host, Host: _Host, ...headers } = signGet(url, region, credentials);
  const res = await fetch(url, { headers });
  return { status: res.status, body: await res.json() };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [baseUrl, path = '/tasks'] = process.argv.slice(2);
  if (!baseUrl) {
    process.stderr.write('usage: node examples/signed-fetch.ts <api base URL> [path and query]\n');
    process.exit(2);
  }
  const { status, body } = await readApi(baseUrl, path);
  process.stdout.write(`${status}\n${JSON.stringify(body, null, 2)}\n`);
}
