// The SQS emulator (fauxqs), started the way the local stack needs it. fauxqs 2.4's startFauxqs falls short
// in one way this module makes up for:
// - with a data folder, a message made visible again at once (ChangeMessageVisibility to 0, as
//   `callbacks dlq list` does after its look) has its receive count written as NULL into a NOT NULL column:
//   the call fails (ERR_SQLITE_ERROR) after the message has left the in-flight set and before it is back in
//   the queue, so it is gone until a restart. Made visible again, a message keeps its receive count and its
//   first receive time, as on SQS.
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

/** startFauxqs, with the correction above. */
export async function startLocalSqs(options: FauxqsOptions): Promise<FauxqsServer> {
  if (options.dataDir) await keepReceiveCounts();
  return startFauxqs(options);
}
