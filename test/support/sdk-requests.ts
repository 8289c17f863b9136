// The AWS requests a bundle can send, as esbuild saw it. Each SDK v3 command is a module of its own
// (`@aws-sdk/client-<service>/dist-es/commands/<Operation>Command.js`), and esbuild's metafile counts the
// bytes every input module contributes to the output after tree shaking: the command modules with bytes in
// the output are the commands in the bundle. Those the project's own modules in the bundle import are the
// requests the code sends; the others are the SDK's own (its credential providers' STS, SSO and sign-in
// clients, which Lambda never uses since its credentials are in the environment, and DynamoDB's endpoint
// discovery, sent only when enabled).
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type BuildOptions } from 'esbuild';

export interface SdkCommand {
  /** The package the command is of: `@aws-sdk/client-dynamodb`, or `@aws-sdk/nested-clients` (the SDK's own). */
  package: string;
  /** The client's service, `dynamodb` for @aws-sdk/client-dynamodb. */
  service: string;
  /** The API operation, `Query` for QueryCommand. */
  operation: string;
}

export interface BundleRequests {
  /** The bundle itself, as esbuild writes it with these options. */
  code: string;
  /** The commands the project's code sends, sorted. */
  sent: SdkCommand[];
  /** The commands in the bundle the project's code does not import: the SDK's own. */
  sdkOwn: SdkCommand[];
  /** Whether a request in the bundle names an index (`IndexName`, which minifying keeps as a property name). */
  namesIndex: boolean;
}

const CLIENT_COMMAND = /@aws-sdk\/client-([a-z0-9-]+)\/dist-es\/commands\/(\w+)Command\.js$/;
const NESTED_COMMAND = /@aws-sdk\/nested-clients\/dist-es\/submodules\/([a-z0-9-]+)\/commands\/(\w+)Command\.js$/;
/** `import { A, type B, C as D } from '@aws-sdk/client-x'` and `const { A } = await import('@aws-sdk/client-x')`. */
const STATIC_IMPORT = /import\s*\{([^}]*)\}\s*from\s*'@aws-sdk\/client-([a-z0-9-]+)'/g;
const DYNAMIC_IMPORT = /\{([^}]*)\}\s*=\s*await\s+import\(\s*'@aws-sdk\/client-([a-z0-9-]+)'\s*\)/g;

const key = (c: SdkCommand) => `${c.package}:${c.service}:${c.operation}`;
const byKey = (a: SdkCommand, b: SdkCommand) => key(a).localeCompare(key(b));

/** The build script is plain .mjs without declarations: imported by URL, typed here. */
export async function functionBuildOptions(): Promise<BuildOptions> {
  const script = (await import(new URL('../../scripts/build.mjs', import.meta.url).href)) as {
    esbuildOptions: BuildOptions;
  };
  return script.esbuildOptions;
}

/** The `*Command` names a module of the project imports from an SDK client, as `package:service:operation`. */
function importedCommands(source: string): Set<string> {
  const names = new Set<string>();
  for (const pattern of [STATIC_IMPORT, DYNAMIC_IMPORT]) {
    for (const [, list, service] of source.matchAll(pattern)) {
      for (const entry of list!.split(',')) {
        const name = entry.trim().split(/\s+as\s+/)[0]!;
        const command = /^(\w+)Command$/.exec(name);
        if (command) names.add(`@aws-sdk/client-${service}:${service}:${command[1]}`);
      }
    }
  }
  return names;
}

/**
 * Bundles each entry with `options` in memory and reads what AWS requests each output can send, in the order
 * given. One esbuild build (the modules the entries share, the SDK's above all, are read once), each entry an
 * output of its own, as built alone (no code splitting).
 */
export async function bundleRequestsOfEach(
  entries: readonly string[],
  options: BuildOptions,
  cwd: string,
): Promise<BundleRequests[]> {
  const outdir = join(cwd, 'out');
  const result = await build({
    ...options,
    entryPoints: entries.map((entry, i) => ({ in: entry, out: `${i}` })),
    outdir,
    outExtension: { '.js': '.mjs' },
    absWorkingDir: cwd,
    write: false,
    metafile: true,
  });
  return entries.map((_, i) => {
    const outPath = join(outdir, `${i}.mjs`);
    const output = result.metafile.outputs[relative(cwd, outPath)];
    const file = result.outputFiles.find((f) => f.path === outPath);
    if (!output || !file) throw new Error(`esbuild wrote no output for ${entries[i]}`);
    return requestsOf(output.inputs, file.text, cwd);
  });
}

/** What requests an output can send, from the bytes each input module contributes to it. */
function requestsOf(inputs: Record<string, { bytesInOutput: number }>, code: string, cwd: string): BundleRequests {
  const inOutput = Object.entries(inputs)
    .filter(([, input]) => input.bytesInOutput > 0)
    .map(([path]) => path);
  const bundled: SdkCommand[] = [];
  const imported = new Set<string>();
  for (const path of inOutput) {
    const client = CLIENT_COMMAND.exec(path);
    const nested = NESTED_COMMAND.exec(path);
    if (client) bundled.push({ package: `@aws-sdk/client-${client[1]}`, service: client[1]!, operation: client[2]! });
    else if (nested) bundled.push({ package: '@aws-sdk/nested-clients', service: nested[1]!, operation: nested[2]! });
    else if (!path.includes('node_modules/') && path.endsWith('.ts')) {
      for (const name of importedCommands(readFileSync(join(cwd, path), 'utf8'))) imported.add(name);
    }
  }
  return {
    code,
    sent: bundled.filter((c) => imported.has(key(c))).sort(byKey),
    sdkOwn: bundled.filter((c) => !imported.has(key(c))).sort(byKey),
    namesIndex: /\bIndexName:/.test(code),
  };
}

/**
 * The IAM action that authorises an operation, or null when none does. An operation's action is named
 * after it, except the batch forms, authorised by the action of a single request, GetCallerIdentity,
 * which every principal may call, Lambda's Invoke (InvokeFunction), and S3's HEAD requests (those of a GET).
 */
export function iamAction(c: SdkCommand): string | null {
  const action = `${c.service}:${c.operation}`;
  const exceptions: Record<string, string | null> = {
    'sns:PublishBatch': 'sns:Publish',
    'sqs:SendMessageBatch': 'sqs:SendMessage',
    'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
    'sqs:ChangeMessageVisibilityBatch': 'sqs:ChangeMessageVisibility',
    'sts:GetCallerIdentity': null,
    'lambda:Invoke': 'lambda:InvokeFunction',
    's3:HeadObject': 's3:GetObject',
    's3:HeadBucket': 's3:ListBucket',
  };
  return action in exceptions ? (exceptions[action] ?? null) : action;
}
