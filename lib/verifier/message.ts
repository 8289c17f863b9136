// What the verifier's queue carries: the task events its subscription to the task-events topic lets through
// (docs/verification.md), delivered raw (the event's JSON is the message body) or, should the subscription lose
// raw delivery, inside SNS's envelope. Only what the verifier uses is read; anything else is no file event.
import * as v from 'valibot';
import { SERVICES } from '../platform/services.ts';

const FileEvent = v.object({
  type: v.string(),
  /** The callback that made it true (platform time): a failure's first failed upload, a success's upload. */
  occurredAt: v.number(),
  task: v.object({
    service: v.picklist(SERVICES),
    id: v.pipe(v.string(), v.minLength(1)),
    appKey: v.pipe(v.string(), v.minLength(1)),
  }),
  file: v.object({
    fileName: v.pipe(v.string(), v.minLength(1)),
    url: v.nullish(v.string(), null),
    attempts: v.optional(v.number(), 0),
    purgeAt: v.nullish(v.number(), null),
  }),
});
export type FileEvent = v.InferOutput<typeof FileEvent>;

const Envelope = v.object({ Type: v.literal('Notification'), Message: v.string() });

/** The file event a message carries, or why it carries none. */
export function readFileEvent(body: string): { ok: true; event: FileEvent } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
    const envelope = v.safeParse(Envelope, json);
    if (envelope.success) json = JSON.parse(envelope.output.Message);
  } catch {
    return { ok: false, reason: 'the message is not JSON' };
  }
  const parsed = v.safeParse(FileEvent, json);
  if (!parsed.success) return { ok: false, reason: 'the message is not a file event of a task' };
  return { ok: true, event: parsed.output };
}
