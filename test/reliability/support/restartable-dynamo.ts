// dynalite on LevelDB (its `path` option) in a process of its own, so that it can be killed in the middle
// of a run, as a crashed or unreachable database would be, and started again as a new server on the same
// port over the same files. (Closed in-process, dynalite throws from requests still in flight.)
import { spawn, type ChildProcess } from 'node:child_process';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../../lib/aws/dynamo/table/table.ts';
import { createActiveTable, dynamoClient } from '../../../devkit/local/dynamo.ts';

const root = new URL('../../..', import.meta.url).pathname;

const SERVER = `
import dynalite from 'dynalite';
const [path, port] = process.argv.slice(-2);
const server = dynalite({ path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(Number(port), '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

export interface RestartableDynamo {
  endpoint: string;
  /** A client with one retry, so that an outage shows up fast as an error. */
  client: DynamoDBClient;
  tableName: string;
  running(): boolean;
  /** Kills the server: requests in flight fail, the files stay. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function spawnServer(path: string, port: number): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SERVER, path, String(port)], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`dynalite exited with ${code} before listening`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ child, port: Number(out.trim()) });
    });
  });
}

export async function startRestartableDynamo(path: string, tableName = 'callbacks-tasks'): Promise<RestartableDynamo> {
  let { child, port } = await spawnServer(path, 0);
  let current: ChildProcess | null = child;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = dynamoClient(endpoint, 2);
  await createActiveTable(client, tableDefinition(tableName));

  const stop = async () => {
    const dying = current;
    if (!dying) return;
    current = null;
    const exited = new Promise<void>((resolve) => dying.once('exit', () => resolve()));
    dying.kill('SIGKILL');
    await exited;
  };
  return {
    endpoint,
    client,
    tableName,
    running: () => current !== null,
    stop,
    async start() {
      if (current) return;
      // Listening is not serving: the new server opens the files after it listens. The outage ends when it
      // answers; one that does not within a few seconds is started again, so that the run's outage is the one
      // the test makes.
      let lastError: unknown;
      for (let attempt = 0; attempt < 3; attempt++) {
        ({ child } = await spawnServer(path, port));
        current = child;
        const until = Date.now() + 5_000;
        while (Date.now() < until) {
          try {
            await client.send(new DescribeTableCommand({ TableName: tableName }));
            return;
          } catch (err) {
            lastError = err;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        await stop();
      }
      throw new Error(`dynalite over ${path} did not answer after three starts: ${String(lastError)}`);
    },
    async close() {
      await stop();
      client.destroy();
    },
  };
}
