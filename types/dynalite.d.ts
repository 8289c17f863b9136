// dynalite ships no type declarations; this is the part of its API the project uses.
declare module 'dynalite' {
  import type { Server } from 'node:http';
  interface DynaliteOptions {
    /** LevelDB folder; in memory when absent. */
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export default dynalite;
}

declare module 'dynalite/db/index.js' {
  import type { AttributeValue } from '@aws-sdk/client-dynamodb';
  /** An item's size in bytes as DynamoDB counts it (attribute names and values), the base of its capacity units. */
  export function itemSize(item: Record<string, AttributeValue>): number;
}
