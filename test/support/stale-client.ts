// A DynamoDB client whose reads by key sometimes answer with an older version of the item (or with none,
// as if it had not been written yet): what an eventually consistent read may do, and what a strongly
// consistent one never does, so that a store that relies on either being fresh shows it. Emulators always
// answer with the latest version; this wraps the real client and remembers each item's versions from the
// puts that went through it.
import { GetItemCommand, PutItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;

export interface StaleReads {
  client: DynamoDBClient;
  /** Reads answered with an older version or with none. */
  staleAnswers(): number;
}

/**
 * `chance` of a stale answer per GetItem of an item this client wrote before; `strong` says whether
 * strongly consistent reads may be stale too (they never are on DynamoDB: only a store that would break on
 * it anyway is tested that way).
 */
export function staleReads(
  client: DynamoDBClient,
  options: { chance: number; strong: boolean; random?: () => number },
): StaleReads {
  const random = options.random ?? Math.random;
  const versions = new Map<string, Item[]>();
  const keyOf = (k: Item | undefined) => `${k?.pk?.S}\u0000${k?.sk?.S}`;
  let stale = 0;
  const send = client.send.bind(client) as (command: unknown) => Promise<any>;
  const wrapped = new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: unknown) => {
        if (command instanceof PutItemCommand) {
          const out = await send(command);
          const item = command.input.Item!;
          const key = keyOf(item);
          versions.set(key, [...(versions.get(key) ?? []), item]);
          return out;
        }
        if (command instanceof GetItemCommand && (options.strong || !command.input.ConsistentRead)) {
          const older = versions.get(keyOf(command.input.Key));
          if (older && random() < options.chance) {
            const out = await send(command);
            // Any version before the one the table holds, or the item not yet there.
            const current = out.Item ? JSON.stringify(out.Item) : null;
            const before = older.filter((v) => JSON.stringify(v) !== current);
            const pick = Math.floor(random() * (before.length + 1));
            stale += 1;
            return { ...out, Item: pick < before.length ? before[pick] : undefined };
          }
        }
        return send(command);
      };
    },
  });
  return { client: wrapped, staleAnswers: () => stale };
}
