// Routing and response shapes; the request flow itself is covered against fauxqs in test/ingest.test.ts.
import { serviceForPath } from './handle-request.ts';
import { errorResponse, errorStatus, okResponse } from '../http-responses.ts';

describe('serviceForPath', () => {
  test.each([
    ['/callbacks/recording', 'recording'],
    ['/callbacks/screenshot', 'screenshot'],
    ['/prod/callbacks/recording', 'recording'],
    ['/callbacks/screenshot/', 'screenshot'],
  ])('%s -> %s', (path, service) => {
    expect(serviceForPath(path)).toBe(service);
  });

  test.each([
    '/',
    '',
    '/health',
    '/callbacks',
    '/callbacks/recordings',
    '/xcallbacks/recording',
    '/callbacks/recording/extra',
    '/CALLBACKS/RECORDING',
  ])('%p is no callback path', (path) => {
    expect(serviceForPath(path)).toBeUndefined();
  });
});

describe('responses', () => {
  test('200 {"ok":true} as JSON', () => {
    expect(okResponse()).toEqual({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"ok":true}',
    });
  });

  test('errors carry the code, a message, and the status the contract gives the code', () => {
    const response = errorResponse('body_too_large', 'Too big.');
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(response.body)).toEqual({ error: { code: 'body_too_large', message: 'Too big.' } });
    expect(errorStatus).toEqual({
      invalid_json: 400,
      invalid_body: 400,
      invalid_query: 400,
      missing_signature: 401,
      invalid_signature: 401,
      stale_timestamp: 401,
      unknown_app_key: 403,
      source_not_allowed: 403,
      not_found: 404,
      method_not_allowed: 405,
      ambiguous_id: 409,
      body_too_large: 413,
      queue_unavailable: 503,
      secrets_unavailable: 503,
      store_unavailable: 503,
      internal_error: 503,
    });
  });

  test('no answer is a 500', () => {
    expect(Object.values(errorStatus).every((status) => status < 500 || status === 503)).toBe(true);
  });
});
