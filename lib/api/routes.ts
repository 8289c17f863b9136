// The read API's routes, as API Gateway names them (route keys). The stack declares them
// (serverless.yml), the handler dispatches on them, and docs/openapi.yaml documents them; tests hold all three
// to this list (the local gateway takes the routes from the packaged template).
export const ApiRoutes = {
  task: 'GET /tasks/{id}',
  tasks: 'GET /tasks',
  events: 'GET /tasks/{id}/events',
} as const;

export type ApiRouteKey = (typeof ApiRoutes)[keyof typeof ApiRoutes];

export const API_ROUTE_KEYS: readonly ApiRouteKey[] = Object.values(ApiRoutes);
