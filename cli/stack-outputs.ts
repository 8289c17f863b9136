// A deployed stage's CloudFormation output, read with one signed DescribeStacks call (the Query API, as
// the AWS CLI's `aws cloudformation describe-stacks` makes it), so that `callbacks console --stage` finds
// the stage's HttpApiUrl without another SDK client. AWS_ENDPOINT_URL_CLOUDFORMATION (the SDKs' own
// variable) points it elsewhere.
import aws4 from 'aws4';
import type { Credentials } from '../examples/signed-fetch.ts';
import { errorSentence } from '../lib/text.ts';
import { cliIo } from './io.ts';

const decodeXml = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

/** The outputs of a DescribeStacks answer (XML), by key. */
export function outputsOf(xml: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const block = /<Outputs>([\s\S]*?)<\/Outputs>/.exec(xml)?.[1] ?? '';
  for (const member of block.split('<member>').slice(1)) {
    const key = /<OutputKey>([\s\S]*?)<\/OutputKey>/.exec(member)?.[1];
    const value = /<OutputValue>([\s\S]*?)<\/OutputValue>/.exec(member)?.[1];
    if (key !== undefined && value !== undefined) outputs[decodeXml(key)] = decodeXml(value);
  }
  return outputs;
}

export async function stackOutput(o: {
  stackName: string;
  outputKey: string;
  region: string;
  credentials: Credentials;
  env?: Readonly<Record<string, string | undefined>>;
}): Promise<string> {
  const env = o.env ?? cliIo().env;
  const endpoint = new URL(env.AWS_ENDPOINT_URL_CLOUDFORMATION ?? `https://cloudformation.${o.region}.amazonaws.com`);
  const query = new URLSearchParams({ Action: 'DescribeStacks', StackName: o.stackName, Version: '2010-05-15' });
  const path = `/?${query}`;
  const signed = aws4.sign(
    { method: 'GET', host: endpoint.host, path, service: 'cloudformation', region: o.region },
    o.credentials,
  );
  const {
    Host: _Host,
    host: _host,
    ...headers
  } = Object.fromEntries(Object.entries(signed.headers ?? {}).map(([k, v]) => [k, String(v)]));
  let status: number;
  let text: string;
  try {
    const res = await fetch(new URL(path, endpoint), { headers, signal: AbortSignal.timeout(15_000) });
    status = res.status;
    text = await res.text();
  } catch (err) {
    throw new Error(`looking up stack ${o.stackName} in ${o.region} failed: ${errorSentence(err)}`);
  }
  if (status !== 200) {
    const message = /<Message>([\s\S]*?)<\/Message>/.exec(text)?.[1];
    throw new Error(
      `looking up stack ${o.stackName} in ${o.region} failed (${status})${message ? `: ${decodeXml(message)}` : ''}`,
    );
  }
  const value = outputsOf(text)[o.outputKey];
  if (!value) throw new Error(`stack ${o.stackName} in ${o.region} has no output ${o.outputKey}`);
  return value;
}
