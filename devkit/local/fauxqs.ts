// The SQS emulator (fauxqs), started the way the local stack needs it. fauxqs 2.4's startFauxqs falls short
// in two ways this module makes up for:
// - it listens on every interface (0.0.0.0) whatever its `host` option says (that option only names the
//   host in queue URLs): anyone on the network could enqueue messages marked as verified, or read and purge
//   the queue. Here it listens on loopback, unless told otherwise;
// - with a data folder, a message made visible again at once (ChangeMessageVisibility to 0, as
//   `callbacks dlq list` does after its look) has its receive count written as NULL into a NOT NULL column:
//   the call fails (ERR_SQLITE_ERROR) after the message has left the in-flight set and before it is back in
//   the queue, so it is gone until a restart. Made visible again, a message keeps its receive count and its
//   first receive time, as on SQS.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Server } from 'node:net';
import { startFauxqs, type FauxqsServer } from 'fauxqs';

export type FauxqsOptions = NonNullable<Parameters<typeof startFauxqs>[0]>;

interface Statement {
  run(...params: unknown[]): unknown;
}
interface PersistenceManager {
  db: { prepare(sql: string): Statement };
  updateMessageReady(messageId: string): void;
}

let persistencePatched: Promise<void> | undefined;

/**
 * Replaces fauxqs' PersistenceManager.updateMessageReady (once per process) by one that only clears the
 * in-flight columns. The class is not exported: its module is imported by its file URL, which gives the
 * very module instance fauxqs uses.
 */
function keepReceiveCounts(): Promise<void> {
  persistencePatched ??= (async () => {
    const url = new URL('./persistence.js', import.meta.resolve('fauxqs')).href;
    const { PersistenceManager } = (await import(url)) as {
      PersistenceManager?: { prototype: PersistenceManager };
    };
    if (typeof PersistenceManager?.prototype.updateMessageReady !== 'function') return;
    const statements = new WeakMap<PersistenceManager, Statement>();
    PersistenceManager.prototype.updateMessageReady = function (this: PersistenceManager, messageId: string) {
      let statement = statements.get(this);
      if (!statement) {
        statement = this.db.prepare(
          'UPDATE sqs_messages SET receipt_handle = NULL, visibility_deadline = NULL WHERE message_id = ?',
        );
        statements.set(this, statement);
      }
      statement.run(messageId);
    };
  })();
  return persistencePatched;
}

/** The address a wildcard listen is moved to, inside a startFauxqs call (and nowhere else). */
const listenAddress = new AsyncLocalStorage<string>();
let rebinding = 0;
let originalListen: Server['listen'] | undefined;

/**
 * Runs `start` with every wildcard listen it makes (0.0.0.0 or ::, which fauxqs hard-codes) moved to
 * `address`. fauxqs offers no way to reach its HTTP server before it listens, so net.Server's listen is
 * wrapped for the time of the call; the wrapper acts only within this call's asynchronous context, so
 * servers started meanwhile by other code are left alone.
 */
async function listeningOn<T>(address: string, start: () => Promise<T>): Promise<T> {
  if (rebinding++ === 0) {
    const listen = Server.prototype.listen;
    originalListen = listen;
    Server.prototype.listen = function (this: Server, ...args: unknown[]) {
      const moveTo = listenAddress.getStore();
      const first = args[0] as { host?: unknown } | null | undefined;
      if (moveTo !== undefined && typeof first === 'object' && first !== null) {
        if (first.host === '0.0.0.0' || first.host === '::') args[0] = { ...first, host: moveTo };
      }
      return (listen as (...a: unknown[]) => Server).apply(this, args);
    } as Server['listen'];
  }
  try {
    return await listenAddress.run(address, start);
  } finally {
    if (--rebinding === 0 && originalListen) Server.prototype.listen = originalListen;
  }
}

/** startFauxqs, with the corrections above. `listenOn` defaults to 127.0.0.1. */
export async function startLocalSqs(options: FauxqsOptions & { listenOn?: string }): Promise<FauxqsServer> {
  const { listenOn = '127.0.0.1', ...fauxqsOptions } = options;
  if (fauxqsOptions.dataDir) await keepReceiveCounts();
  return listeningOn(listenOn, () => startFauxqs(fauxqsOptions));
}
