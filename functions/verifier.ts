// Lambda entry for the verifier, fed by its queue (serverless.yml): checks each file reported uploaded in its
// storage, off the worker's path. The handler is built once per container, at load, from the function's
// environment. The logic lives in lib/verifier/.
import { createVerifierHandler } from '../lib/verifier/handler.ts';

export const handler = createVerifierHandler(process.env);
