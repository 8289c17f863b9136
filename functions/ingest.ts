// Lambda entry for POST /callbacks/recording and POST /callbacks/screenshot (API Gateway HTTP API, payload
// format 2.0): the handler built once per container, at load, from the function's environment. The logic
// lives in lib/ingest/.
import { createIngestHandler } from '../lib/ingest/handler.ts';

export const handler = createIngestHandler(process.env);
