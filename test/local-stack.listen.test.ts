// Every port the local stack opens listens on loopback only: nobody else on the network may reach the
// emulators (the SQS one would take messages marked as verified, or hand out and purge the queue). `--host`
// moves the callback routes, and only them. The addresses are read from the kernel's socket table.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalStack } from '../devkit/local/stack.ts';

const procTables = ['/proc/net/tcp', '/proc/net/tcp6'];
const linux = procTables.every((f) => existsSync(f));

/** Addresses with a socket listening on this TCP port, from /proc/net/tcp and tcp6 (Linux). */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const file of procTables) {
    for (const line of readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [hexAddress, hexPort] = local!.split(':');
      // 0A: LISTEN.
      if (state !== '0A' || Number.parseInt(hexPort!, 16) !== port) continue;
      found.push(decodeAddress(hexAddress!));
    }
  }
  return found.sort();
}

/** The kernel writes addresses as 32-bit words in host (little-endian) order. */
function decodeAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(''));
  if (words.length === 1)
    return words[0]!
      .match(/../g)!
      .map((b) => Number.parseInt(b, 16))
      .join('.');
  // The URL parser writes an IPv6 address in its shortest form.
  return new URL(`http://[${words.join('').match(/.{4}/g)!.join(':')}]`).hostname;
}

const port = (url: string) => Number(new URL(url).port);
let cwd: string;
beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-listen-'));
});
afterAll(() => rm(cwd, { recursive: true, force: true }));

(linux ? test : test.skip)('the decoder reads the socket table as the kernel writes it', () => {
  expect(decodeAddress('0100007F')).toBe('127.0.0.1');
  expect(decodeAddress('00000000')).toBe('0.0.0.0');
  expect(decodeAddress('00000000000000000000000001000000')).toBe('[::1]');
  expect(decodeAddress('00000000000000000000000000000000')).toBe('[::]');
});

(linux ? test : test.skip)(
  'HTTP routes, DynamoDB and SQS listen on 127.0.0.1 alone; --host moves the routes and nothing else',
  async () => {
    const stack = await startLocalStack({ port: 0, cwd, memory: true, quiet: true });
    const ports = {
      http: port(stack.url),
      dynamodb: port(stack.info.dynamoEndpoint),
      sqs: port(stack.info.sqsEndpoint),
    };
    const addresses = () => Object.fromEntries(Object.entries(ports).map(([name, p]) => [name, listeningAddresses(p)]));
    try {
      expect(addresses()).toEqual({ http: ['127.0.0.1'], dynamodb: ['127.0.0.1'], sqs: ['127.0.0.1'] });
    } finally {
      await stack.stop();
    }
    expect(addresses()).toEqual({ http: [], dynamodb: [], sqs: [] });

    // The emulators take the ports they are given: the second stack listens where the first did.
    const exposed = await startLocalStack({
      port: 0,
      host: '0.0.0.0',
      cwd,
      memory: true,
      quiet: true,
      dynamoPort: ports.dynamodb,
      sqsPort: ports.sqs,
    });
    ports.http = port(exposed.url);
    try {
      expect(addresses()).toEqual({ http: ['0.0.0.0'], dynamodb: ['127.0.0.1'], sqs: ['127.0.0.1'] });
      // Still reachable where the CLI looks for it.
      expect((await fetch(`${exposed.info.sqsEndpoint}/`, { method: 'POST' })).status).toBeLessThan(500);
    } finally {
      await exposed.stop();
    }
  },
);
