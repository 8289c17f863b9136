// Lambda entry for the worker, SQS -> DynamoDB: the handler built once per container, at load, from the
// function's environment (a bad setting stops the function there). The logic lives in lib/worker/.
import { createWorkerHandler } from '../lib/worker/handler.ts';

export const handler = createWorkerHandler(process.env);
