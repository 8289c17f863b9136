// The read API's routes, as API Gateway names them (route keys). The stack declares them
// (serverless.yml), the handler dispatches on them, the local gateway matches requests against them, and
// docs/openapi.yaml documents them; tests hold all four to this list.
export const ApiRoutes = {
  task: 'GET /tasks/{id}',
  tasks: 'GET /tasks',
  events: 'GET /tasks/{id}/events',
} as const;

export type ApiRouteKey = (typeof ApiRoutes)[keyof typeof ApiRoutes];

export const API_ROUTE_KEYS: readonly ApiRouteKey[] = Object.values(ApiRoutes);

export interface MatchedRoute {
  routeKey: ApiRouteKey;
  pathParameters?: { id: string };
}

/**
 * The route a request reaches, as API Gateway would match it: `{id}` is one non-empty path segment,
 * percent-decoded. Null for anything else (it goes to the `$default` route).
 */
export function matchApiRoute(method: string, path: string): MatchedRoute | null {
  if (method.toUpperCase() !== 'GET') return null;
  const segments = path.split('/');
  if (segments[0] !== '' || segments[1] !== 'tasks') return null;
  if (segments.length === 2) return { routeKey: ApiRoutes.tasks };
  const raw = segments[2]!;
  if (raw === '' || segments.length > 4) return null;
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    return null;
  }
  if (segments.length === 3) return { routeKey: ApiRoutes.task, pathParameters: { id } };
  return segments[3] === 'events' ? { routeKey: ApiRoutes.events, pathParameters: { id } } : null;
}
