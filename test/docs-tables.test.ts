// The tables of the docs that list facts of the code and of the service cannot drift from them: they are read
// here and compared, at test time, with serverless.yml and the infra/ files it names, and with the code each
// handler reaches. The alarms table of docs/operations.md (each alarm's name, metric and threshold), the
// roles table of docs/deployment.md (each role's actions, statement by statement), and the environment tables of
// docs/configuration.md (every variable a function's code reads, every one the service sets, and the value it
// sets; for the variables of a function's schema, lib/config/read-env.ts, the default it falls back to).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { apiEnvironment } from '../lib/api/config.ts';
import { defaultInWords, type EnvSchema, type FunctionName } from '../lib/config/read-env.ts';
import { ingestEnvironment, MAX_BODY_BYTES_LIMIT } from '../lib/ingest/config.ts';
import { workerEnvironment } from '../lib/worker/config.ts';
import { sweeperEnvironment } from '../lib/sweeper/config.ts';
import { verifierEnvironment } from '../lib/verifier/config.ts';
import { envReads } from './support/env-reads.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

// ---------------------------------------------------------------------------------------------------
// The service, as serverless.yml and its resource files declare it

/** A value as serverless.yml writes it; `Fn::If` sets the variable, or leaves it out (`AWS::NoValue`). */
type EnvValue = string | { Ref: string } | { 'Fn::If': [string, EnvValue, EnvValue] };
interface ServiceFunction {
  role: string;
  environment?: Record<string, EnvValue>;
}
interface Statement {
  Action: string | string[];
}
interface CfnResource {
  Type: string;
  Properties: {
    AlarmName?: string;
    AlarmDescription?: string;
    MetricName?: string;
    Dimensions?: { Name: string; Value: Reference }[];
    ComparisonOperator?: string;
    Threshold?: number;
    Period?: number;
    EvaluationPeriods?: number;
    DatapointsToAlarm?: number;
    QueueName?: string;
    DeliveryStreamName?: string;
    Policies?: { PolicyDocument: { Statement: Statement[] } }[];
  };
}
type Reference = { Ref: string } | { 'Fn::GetAtt': [string, string] };

const service = parse(read('serverless.yml')) as {
  functions: Record<string, ServiceFunction>;
  resources: string[];
};
/**
 * Every file serverless.yml takes resources from, merged as osls merges them; not infra/legacy-queue.cjs, which
 * adds the standard queue of earlier versions only when packaged with legacyQueue=true (deployment.md says so), nor
 * infra/storage-params.cjs, whose verifier storage policy is made of the stage's storage settings (none by default).
 */
const infra = service.resources
  .filter((entry) => !/\.cjs\)(:\w+)?\}$/.test(entry))
  .map((entry) => {
    const file = /^\$\{file\(([^)]+)\)\}$/.exec(entry)?.[1];
    if (!file) throw new Error(`serverless.yml: resources entry ${entry} is not a \${file(...)}`);
    return parse(read(file)) as {
      Resources?: Record<string, CfnResource>;
      Parameters?: Record<string, { Default: string }>;
    };
  });
const resources: Record<string, CfnResource> = Object.assign({}, ...infra.map((f) => f.Resources ?? {}));
const parameters: Record<string, { Default: string }> = Object.assign({}, ...infra.map((f) => f.Parameters ?? {}));
const functionNames = Object.keys(service.functions);
/** What names of the service's resources start with. */
const NAME_PREFIX = '${self:service}-${sls:stage}-';

// ---------------------------------------------------------------------------------------------------
// Markdown tables

interface Table {
  heading: string;
  header: string[];
  rows: string[][];
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());

/** Every table of a Markdown file, with the heading it sits under. */
function tablesOf(path: string): Table[] {
  const lines = read(path).split('\n');
  const tables: Table[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h) heading = h[1]!.trim();
    if (!line.startsWith('|') || !/^\|[\s:|-]+\|$/.test(lines[i + 1]?.trim() ?? '')) continue;
    const table: Table = { heading, header: cellsOf(line), rows: [] };
    for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) table.rows.push(cellsOf(lines[i]!));
    tables.push(table);
  }
  return tables;
}

/** The one table of the file with this header; its rows as records by column name. */
function tableWithHeader(path: string, header: string[]): Record<string, string>[] {
  const found = tablesOf(path).filter((t) => t.header.join('|') === header.join('|'));
  if (found.length !== 1) throw new Error(`${path}: ${found.length} tables with the header ${header.join(' | ')}`);
  return found[0]!.rows.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i] ?? ''])));
}

const unquote = (cell: string) => /^`([^`]*)`$/.exec(cell)?.[1] ?? cell;

// ---------------------------------------------------------------------------------------------------
// The alarms

const operators: Record<string, string> = {
  GreaterThanThreshold: '>',
  GreaterThanOrEqualToThreshold: '≥',
  LessThanThreshold: '<',
  LessThanOrEqualToThreshold: '≤',
};

/** How the alarms table names what a metric is measured on. */
function dimensionInWords(value: Reference): string {
  if ('Fn::GetAtt' in value) {
    const [id, attribute] = value['Fn::GetAtt'];
    const queueName = resources[id]?.Properties.QueueName;
    if (attribute === 'QueueName' && queueName?.startsWith(NAME_PREFIX))
      return `\`${queueName.slice(NAME_PREFIX.length)}\``;
  } else {
    // osls names a function's resource <Name>LambdaFunction and the HTTP API HttpApi.
    const fn = /^(\w)(\w*)LambdaFunction$/.exec(value.Ref);
    if (fn && functionNames.includes(`${fn[1]!.toLowerCase()}${fn[2]}`)) return `\`${fn[1]!.toLowerCase()}${fn[2]}\``;
    if (value.Ref === 'HttpApi') return 'the HTTP API';
    const stream = resources[value.Ref]?.Properties.DeliveryStreamName;
    if (stream?.startsWith(NAME_PREFIX)) return `\`${stream.slice(NAME_PREFIX.length)}\``;
  }
  throw new Error(`the alarms table has no way to name the dimension ${JSON.stringify(value)}: teach this test one`);
}

/** An alarm as the Watches column writes it: "`Metric` of `thing` ≥ 1 in 5 min, 3 in a row". */
function watches(alarm: CfnResource['Properties']): string {
  const on = (alarm.Dimensions ?? []).map((d) => ` of ${dimensionInWords(d.Value)}`).join('');
  const operator = operators[alarm.ComparisonOperator ?? ''] ?? alarm.ComparisonOperator;
  const periods = alarm.EvaluationPeriods ?? 1;
  const datapoints = alarm.DatapointsToAlarm ?? periods;
  const row = periods === 1 ? '' : datapoints === periods ? `, ${periods} in a row` : `, ${datapoints} of ${periods}`;
  return `\`${alarm.MetricName}\`${on} ${operator} ${alarm.Threshold} in ${(alarm.Period ?? 0) / 60} min${row}`;
}

describe('the alarms table of docs/operations.md', () => {
  const documented = tableWithHeader('docs/operations.md', ['Alarm', 'Watches', 'Fires when', 'Runbook']);
  const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');

  test('there are alarms to compare', () => {
    expect(alarms.length).toBeGreaterThan(5);
  });

  test('names every alarm of the service, once, with the metric and threshold it watches', () => {
    const expected = Object.fromEntries(
      alarms.map((a) => {
        const name = a.Properties.AlarmName ?? '';
        if (!name.startsWith(NAME_PREFIX)) throw new Error(`alarm ${name} is not named ${NAME_PREFIX}<name>`);
        return [name.slice(NAME_PREFIX.length), watches(a.Properties)];
      }),
    );
    const rows = documented.map((r) => [unquote(r.Alarm!), r.Watches!] as const);
    expect(rows.length).toBe(new Set(rows.map(([name]) => name)).size);
    expect(Object.fromEntries(rows)).toEqual(expected);
  });

  test("each alarm's description names its runbook, a page of docs/runbooks/ that the table links", () => {
    const linked = Object.fromEntries(
      documented.map((r) => [unquote(r.Alarm!), /\]\((runbooks\/[a-z-]+\.md)\)$/.exec(r.Runbook!)?.[1] ?? r.Runbook]),
    );
    for (const alarm of alarms) {
      const name = alarm.Properties.AlarmName!.slice(NAME_PREFIX.length);
      const named = /Runbook: docs\/(runbooks\/[a-z-]+\.md)$/.exec(alarm.Properties.AlarmDescription ?? '')?.[1];
      expect({ name, named }).toEqual({ name, named: linked[name] });
      expect(read(`docs/${named}`)).toMatch(/^# Runbook: /);
      expect((alarm.Properties.AlarmDescription ?? '').length).toBeLessThanOrEqual(1024);
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// The roles

describe('the roles table of docs/deployment.md', () => {
  const documented = tableWithHeader('docs/deployment.md', ['Role', 'May do', 'On']);

  test("lists each function's role, one row per statement of infra/roles.yml in its order, with its actions", () => {
    const byRole: Record<string, string[][]> = {};
    let role = '';
    for (const row of documented) {
      role = row.Role || role;
      const actions = [...row['May do']!.matchAll(/`([a-z0-9-]+:[A-Za-z*]+)`/g)].map((m) => m[1]!);
      byRole[role] = [...(byRole[role] ?? []), actions.sort()];
    }
    const expected = Object.fromEntries(
      functionNames.map((name) => {
        const roleId = service.functions[name]!.role;
        const policies = resources[roleId]?.Properties.Policies;
        if (!policies) throw new Error(`function ${name}: role ${roleId} has no policies in the resource files`);
        const statements = policies.flatMap((p) => p.PolicyDocument.Statement);
        return [name, statements.map((s) => (Array.isArray(s.Action) ? [...s.Action] : [s.Action]).sort())];
      }),
    );
    expect(byRole).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------------
// The environment

/** The files a module reaches through its (non-type) imports, itself included. */
function reachableFiles(entry: string): string[] {
  const seen = new Set<string>();
  const pending = [join(root, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    if (!existsSync(file)) throw new Error(`${relative(root, file)} is imported but does not exist`);
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\b(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'/g)) {
      if (!m[1]) pending.push(resolve(dirname(file), m[2]!));
    }
    for (const m of text.matchAll(/\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)) pending.push(resolve(dirname(file), m[1]!));
  }
  return [...seen];
}

/** Each function's schema, and the file that declares it and reads the environment with it. */
const schemas: Record<string, { schema: { functionName: FunctionName; variables: EnvSchema }; file: string }> = {
  ingest: { schema: ingestEnvironment, file: 'lib/ingest/config.ts' },
  worker: { schema: workerEnvironment, file: 'lib/worker/config.ts' },
  api: { schema: apiEnvironment, file: 'lib/api/config.ts' },
  sweeper: { schema: sweeperEnvironment, file: 'lib/sweeper/config.ts' },
  verifier: { schema: verifierEnvironment, file: 'lib/verifier/config.ts' },
};

function schemaOf(name: string) {
  const entry = schemas[name];
  if (!entry) throw new Error(`function ${name} has no environment schema in this test: add it`);
  return entry;
}

/** What the files a handler reaches read directly, outside its schema. */
function directReadsOf(name: string): string[] {
  const files = reachableFiles(`functions/${name}.ts`);
  expect(files).toContain(join(root, schemaOf(name).file));
  return [...new Set(files.flatMap((file) => envReads(file)))].sort();
}

/** What a handler's code reads: its schema's variables, and what the files it reaches read directly. */
function codeReadsOf(name: string): string[] {
  return [...new Set([...Object.keys(schemaOf(name).schema.variables), ...directReadsOf(name)])].sort();
}

interface EnvRow {
  variable: string;
  readBy: string;
  deployed: string;
  default: string;
  meaning: string;
}

const ENV_HEADER = ['Variable', 'Read by', 'Deployed', 'Default', 'Meaning'];
const READERS = ['function', 'AWS SDK', 'extension', 'function, extension'];

/**
 * The rows of configuration.md that apply to a function: its own section's and those of "Every function" (unless
 * `ownOnly`).
 */
function documentedEnv(name: string, { ownOnly = false } = {}): EnvRow[] {
  const tables = tablesOf('docs/configuration.md').filter(
    (t) => (!ownOnly && t.heading === 'Every function') || t.heading === `The \`${name}\` function`,
  );
  if (tables.length !== (ownOnly ? 1 : 2))
    throw new Error(`docs/configuration.md: no section "The \`${name}\` function" with a table`);
  return tables.flatMap((t) => {
    expect(t.header).toEqual(ENV_HEADER);
    return t.rows.map(([variable = '', readBy = '', deployed = '', defaultValue = '', meaning = '']) => ({
      variable: unquote(variable),
      readBy,
      deployed,
      default: defaultValue,
      meaning,
    }));
  });
}

/** A value of a function's `environment` in serverless.yml as the Deployed column writes it. */
function deployedInWords(value: EnvValue): string {
  if (typeof value === 'string') return `\`${value}\``;
  if ('Fn::If' in value) {
    const set = value['Fn::If']
      .slice(1)
      .filter((v) => typeof v === 'string' || !('Ref' in v) || v.Ref !== 'AWS::NoValue');
    if (set.length !== 1) throw new Error('an Fn::If in the environment must set one value or leave the variable out');
    return deployedInWords(set[0]!);
  }
  const parameter = parameters[value.Ref];
  if (parameter) {
    const stageParameter = /:(\w+)\}$/.exec(parameter.Default)?.[1];
    if (!stageParameter) throw new Error(`parameter ${value.Ref} takes its default from no stage parameter`);
    return `\`--param ${stageParameter}\``;
  }
  if (resources[value.Ref]) return `\`${value.Ref}\``;
  throw new Error(`the environment names ${value.Ref}, neither a parameter nor a resource of the stack`);
}

describe('the environment tables of docs/configuration.md', () => {
  test('every function has a section, and the code of each handler reads the environment', () => {
    for (const name of functionNames) {
      expect(documentedEnv(name).length).toBeGreaterThan(0);
      expect(codeReadsOf(name)).toContain('LOG_LEVEL');
    }
  });

  test.each(functionNames)('%s: the variables its code reads are exactly those read by "function"', (name) => {
    const rows = documentedEnv(name);
    expect(rows.filter((r) => !READERS.includes(r.readBy))).toEqual([]);
    expect(rows.length).toBe(new Set(rows.map((r) => r.variable)).size);
    const documented = rows.filter((r) => r.readBy.split(', ').includes('function')).map((r) => r.variable);
    expect(documented.sort()).toEqual(codeReadsOf(name));
  });

  test.each(functionNames)('%s: every variable serverless.yml sets is listed, with the value it sets', (name) => {
    const environment = service.functions[name]!.environment ?? {};
    const rows = documentedEnv(name);
    const listed = Object.fromEntries(rows.map((r) => [r.variable, r.deployed.replace(/ \(its [^)]*\)$/, '')]));
    const expected = Object.fromEntries(
      rows.map((r) => {
        const value = environment[r.variable];
        if (value !== undefined) return [r.variable, deployedInWords(value)];
        return [r.variable, r.deployed === 'Lambda' ? 'Lambda' : '—'];
      }),
    );
    expect(Object.keys(environment).filter((v) => !(v in listed))).toEqual([]);
    expect(listed).toEqual(expected);
  });

  test.each(functionNames)(
    '%s: its own section lists exactly the variables of its schema read by "function", each with its default',
    (name) => {
      const { schema } = schemaOf(name);
      const rows = documentedEnv(name, { ownOnly: true }).filter((r) => r.readBy.split(', ').includes('function'));
      const documented = Object.fromEntries(rows.map((r) => [r.variable, r.default]));
      const declared = Object.fromEntries(
        Object.entries(schema.variables).map(([variable, declaration]) => [variable, defaultInWords(declaration)]),
      );
      expect(documented).toEqual(declared);
    },
  );

  test.each(functionNames)('%s: its code reads its own variables only through its schema', (name) => {
    const shared = new Set(
      tablesOf('docs/configuration.md')
        .find((t) => t.heading === 'Every function')!
        .rows.map(([variable = '']) => unquote(variable)),
    );
    expect(directReadsOf(name).filter((variable) => !shared.has(variable))).toEqual([]);
  });

  test("MAX_BODY_BYTES's maximum is the one the ingest enforces", () => {
    const row = documentedEnv('ingest').find((r) => r.variable === 'MAX_BODY_BYTES');
    expect(row?.meaning).toContain(`at most \`${MAX_BODY_BYTES_LIMIT}\``);
  });
});
