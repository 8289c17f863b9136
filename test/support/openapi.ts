// docs/openapi.yaml as tests read it: the operations it documents (as API Gateway route keys), the query
// parameters of each, and a check of a real answer against the schema it documents for that status.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

const file = new URL('../../docs/openapi.yaml', import.meta.url);
export const openapi = parse(readFileSync(file, 'utf8')) as any;

const ajv = new Ajv2020({ strict: true, allErrors: true });
// The document's own fields are not JSON Schema keywords; schemas are reached inside it by JSON pointer.
for (const keyword of ['openapi', 'info', 'servers', 'security', 'paths', 'components']) ajv.addKeyword(keyword);
ajv.addSchema({ ...openapi, $id: 'openapi' });

const resolve = (node: any): any => {
  if (!node?.$ref) return node;
  const path = String(node.$ref).replace(/^#\//, '').split('/');
  return resolve(path.reduce((at: any, key: string) => at[key], openapi));
};

/** `GET /tasks/{id}` and so on: the route keys the document covers. */
export function documentedRoutes(): string[] {
  return Object.entries(openapi.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

function operation(routeKey: string): any {
  const [method, path] = routeKey.split(' ');
  const op = openapi.paths[path!]?.[method!.toLowerCase()];
  if (!op) throw new Error(`docs/openapi.yaml does not document ${routeKey}`);
  return op;
}

/** Compiles every schema of the document in ajv's strict mode: a typo in a keyword fails here. */
export function compileAllSchemas(): string[] {
  const names = Object.keys(openapi.components.schemas);
  for (const name of names) ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
  return names;
}

export function documentedQueryParameters(routeKey: string): string[] {
  return (operation(routeKey).parameters as unknown[])
    .map(resolve)
    .filter((p: any) => p.in === 'query')
    .map((p: any) => p.name as string)
    .sort();
}

const validators = new Map<string, ValidateFunction>();

/**
 * Why an answer does not match what the document says of that route and status (empty when it does):
 * a status it does not document, or a body outside the schema.
 */
export function conformance(routeKey: string, status: number, body: unknown): string[] {
  const response = resolve(operation(routeKey).responses[String(status)]);
  if (!response) return [`status ${status} is not documented for ${routeKey}`];
  const pointer = `${routeKey} ${status}`;
  let validate = validators.get(pointer);
  if (!validate) {
    // The schema's references point into the document, which ajv holds as `openapi`.
    const schema = JSON.stringify(response.content['application/json'].schema);
    validate = ajv.compile(JSON.parse(schema.replaceAll('"#/components/', '"openapi#/components/')));
    validators.set(pointer, validate);
  }
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}
