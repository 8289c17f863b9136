// Lambda entry for the read API: GET /tasks, GET /tasks/{id} and GET /tasks/{id}/events (API Gateway HTTP
// API, payload format 2.0, behind its AWS_IAM authorizer): the handler built once per container, at load,
// from the function's environment. The logic lives in lib/api/.
import { createApiHandler } from '../lib/api/handler.ts';

export const handler = createApiHandler(process.env);
