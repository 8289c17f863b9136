// The message limits of SQS and SNS, checked on the local stack before a call reaches the emulator, which
// does not check them all: an SQS message or batch over 1 MiB (body and attributes), an SNS message or batch over
// 256 KiB, a batch of more than 10 entries. The error is the one the service gives.
import { Buffer } from 'node:buffer';
import type { CommandInput, MiddlewareClient } from './sdk-middleware.ts';

/** 1 MiB: the largest SQS message, and the largest SQS batch in all. */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
/** 256 KiB: the largest SNS message, and the largest SNS batch in all. */
export const SNS_MAX_MESSAGE_BYTES = 262_144;
const MAX_BATCH_ENTRIES = 10;

interface Attribute {
  DataType?: string;
  StringValue?: string;
  BinaryValue?: Uint8Array;
}

const bytes = (text: string | undefined) => Buffer.byteLength(text ?? '', 'utf8');

/** A message's size as SQS and SNS count it: the body, and each attribute's name, type and value. */
export function messageBytes(body: string | undefined, attributes: Record<string, Attribute> | undefined): number {
  let total = bytes(body);
  for (const [name, a] of Object.entries(attributes ?? {}))
    total += bytes(name) + bytes(a.DataType) + (a.BinaryValue ? a.BinaryValue.length : bytes(a.StringValue));
  return total;
}

export interface LimitViolation {
  name: string;
  message: string;
}

interface Entry {
  MessageBody?: string;
  Message?: string;
  MessageAttributes?: Record<string, Attribute>;
}

function batch(
  input: CommandInput,
  names: { tooMany: string; tooLong: string; maxBytes: number },
  body: (e: Entry) => string | undefined,
) {
  const entries = (input.PublishBatchRequestEntries ?? input.Entries ?? []) as Entry[];
  if (entries.length > MAX_BATCH_ENTRIES)
    return {
      name: names.tooMany,
      message: `The batch request contains more entries than permissible (${entries.length}).`,
    };
  const total = entries.reduce((sum, e) => sum + messageBytes(body(e), e.MessageAttributes), 0);
  if (total > names.maxBytes)
    return {
      name: names.tooLong,
      message: `Batch requests cannot be longer than ${names.maxBytes} bytes (this one: ${total}).`,
    };
  return null;
}

/** What the service refuses in this call for its size, or null. */
export function limitViolation(clientName: string, commandName: string, input: CommandInput): LimitViolation | null {
  const call = `${clientName}.${commandName}`;
  switch (call) {
    case 'SQSClient.SendMessageCommand': {
      const size = messageBytes(input.MessageBody as string, input.MessageAttributes as Record<string, Attribute>);
      return size > SQS_MAX_MESSAGE_BYTES
        ? {
            name: 'InvalidParameterValue',
            message:
              'One or more parameters are invalid. Reason: Message must be shorter than ' +
              `${SQS_MAX_MESSAGE_BYTES} bytes.`,
          }
        : null;
    }
    case 'SQSClient.SendMessageBatchCommand':
      return batch(
        input,
        { tooMany: 'TooManyEntriesInBatchRequest', tooLong: 'BatchRequestTooLong', maxBytes: SQS_MAX_MESSAGE_BYTES },
        (e) => e.MessageBody,
      );
    case 'SNSClient.PublishCommand': {
      const size = messageBytes(input.Message as string, input.MessageAttributes as Record<string, Attribute>);
      return size > SNS_MAX_MESSAGE_BYTES
        ? { name: 'InvalidParameterException', message: 'Invalid parameter: Message too long' }
        : null;
    }
    case 'SNSClient.PublishBatchCommand':
      return batch(
        input,
        {
          tooMany: 'TooManyEntriesInBatchRequestException',
          tooLong: 'BatchRequestTooLongException',
          maxBytes: SNS_MAX_MESSAGE_BYTES,
        },
        (e) => e.Message,
      );
    default:
      return null;
  }
}

/** A refused call, as the SDK reports a service's error. */
class ServiceLimitError extends Error {
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
  constructor(violation: LimitViolation) {
    super(violation.message);
    this.name = violation.name;
  }
}

/** Adds the checks to a client. */
export function enforceServiceLimits(client: object): void {
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => async (args) => {
      const violation = limitViolation(String(context.clientName), String(context.commandName), args.input ?? {});
      if (violation) throw new ServiceLimitError(violation);
      return next(args);
    },
    { step: 'initialize', name: 'localServiceLimits' },
  );
}
