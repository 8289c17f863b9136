// `callbacks storage status|probe`: the storages whose uploads fail, as one incident each (docs/verification.md,
// "Storage incidents"): the files affected, the moment a new storage configuration must be made by to save the
// first of them (switch-by: its purge less the 30 minutes a configuration takes to apply), the latest probe; and a
// probe of the storages now, where their settings allow one: locally against the stack's storage, deployed by the
// stage's verifier itself (its role, its network), invoked with `{"probe": {"appKey": ...}}`.
import type { Command } from 'commander';
import { IncidentStore, type StorageTracker } from '../../lib/aws/dynamo/storage/storage-incidents.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { StorageChecks } from '../../lib/aws/storage/storage-checks.ts';
import type { ProbeResult, StorageIncident } from '../../lib/domain/storage-incidents.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, SERVICE } from '../../devkit/local/deployed-settings.ts';
import type { Target } from '../../devkit/local/target.ts';
import { fields, isoTime, printable, styled, timeWithRelative, type Colors } from '../format.ts';
import { CliError, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { cliIo, setExitCode } from '../io.ts';
import { stageFunctionName } from '../stage-insight.ts';
import { durationText } from './tasks.ts';

/** A storage with failures: its open incident (or the last one), and its window of failures. */
export interface StorageStatus {
  appKey: string;
  storage: string;
  state: 'open' | 'failing' | 'resolved';
  incident: StorageIncident | null;
  probe: ProbeResult | null;
}

/** Resolved incidents are shown this long after they were resolved. */
const RESOLVED_SHOWN_MS = 24 * 3_600_000;

export async function storageStatus(target: Target, now: number): Promise<StorageStatus[]> {
  const store = new IncidentStore(new TableReader(target.dynamo, target.tableName));
  const out: StorageStatus[] = [];
  for (const t of await store.trackers()) {
    const [last] = await store.incidents(t.appKey, t.storage, 1);
    const state = stateOf(t, last);
    if (state === 'resolved' && (last?.resolvedAt ?? 0) < now - RESOLVED_SHOWN_MS) continue;
    if (state === null) continue;
    out.push({
      appKey: t.appKey,
      storage: t.storage,
      state,
      incident: last ?? null,
      probe: t.probe ?? last?.probe ?? null,
    });
  }
  const rank = { open: 0, failing: 1, resolved: 2 } as const;
  return out.sort((a, b) => rank[a.state] - rank[b.state] || (a.incident?.switchBy ?? 0) - (b.incident?.switchBy ?? 0));
}

function stateOf(t: StorageTracker, last: StorageIncident | undefined): StorageStatus['state'] | null {
  if (t.incidentId !== null) return 'open';
  if (t.windowStart !== null) return 'failing';
  return last?.resolvedAt ? 'resolved' : null;
}

/** When a switch of storage is due: the countdown, or how long ago it passed. */
function switchByText(switchBy: number, now: number, c: Colors): string {
  const left = switchBy - now;
  if (left <= 0)
    return c.red(`${isoTime(switchBy)} (passed ${durationText(-left)} ago: the first file is past saving)`);
  const text = `${isoTime(switchBy)} (in ${durationText(left)})`;
  return left < 2 * 3_600_000 ? c.red(text) : c.yellow(text);
}

function probeText(p: ProbeResult | null, now: number, c: Colors): string {
  if (!p) return c.dim('none (the storage setting allows no probe)');
  const color = p.result === 'ok' ? c.green : p.result === 'slow' ? c.yellow : c.red;
  return styled`${color(p.result)}: ${p.message} (${p.ms} ms, ${timeWithRelative(p.at, now)})`;
}

export function renderStatus(statuses: readonly StorageStatus[], c: Colors, now: number): string {
  if (statuses.length === 0) return c.green('No storage incident: no upload failing, none resolved in the last 24 h.');
  return statuses
    .map((s) => {
      const i = s.incident;
      const head = styled`${c.bold(s.storage)}  ${s.appKey}  ${
        s.state === 'open' ? c.red('incident open') : s.state === 'failing' ? c.yellow('failing') : c.green('resolved')
      }`;
      if (!i) return `${head}\n${fields([['failures', 'seen; the next sweep judges them']], c)}`;
      const pairs: [string, string][] = [
        ['opened', timeWithRelative(i.openedAt, now)],
        [
          'first failure',
          styled`${timeWithRelative(i.firstFailure.at, now)}  ${i.firstFailure.taskId} ${i.firstFailure.fileName}`,
        ],
        ['files affected', String(i.filesAffected)],
        ['earliest purge', timeWithRelative(i.earliestPurgeAt, now)],
        ['switch by', s.state === 'resolved' ? isoTime(i.switchBy) : switchByText(i.switchBy, now, c)],
        ['probe', probeText(s.probe, now, c)],
      ];
      if (i.resolvedAt !== null)
        pairs.push(['resolved', `${timeWithRelative(i.resolvedAt, now)} (${(i.resolution ?? '').replace(/_/g, ' ')})`]);
      return `${head}\n${fields(pairs, c)}`;
    })
    .join('\n\n');
}

/** The probes of the target's storages: locally against the stack's storage, deployed by the stage's verifier. */
async function probes(
  target: Target,
  appKey: string | undefined,
): Promise<{ appKey: string; storage: string | null; probe: ProbeResult | null }[]> {
  if (target.kind === 'local') {
    const storage = target.local?.storage;
    if (!storage) throw new CliError('the local stack names no storage (its stack file is of an older version)');
    const checks = new StorageChecks(storage.settings, {
      timeoutMs: 5000,
      clients: { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoints: { s3: storage.s3Endpoint } },
    });
    const keys = appKey ? [appKey] : checks.appKeys();
    return Promise.all(
      keys.map(async (k) => ({ appKey: k, storage: checks.storageOf(k), probe: await checks.probe(k) })),
    );
  }
  if (!target.stage) throw new CliError("a probe of a deployed storage needs --stage: the stage's verifier runs it");
  const { LambdaClient, InvokeCommand } = await import('@aws-sdk/client-lambda');
  const lambda = new LambdaClient({ region: target.region, maxAttempts: 2 });
  try {
    const name = stageFunctionName(target.stage, 'verifier', cliIo().env.CALLBACKS_SERVICE_NAME ?? SERVICE);
    const res = await lambda.send(
      new InvokeCommand({ FunctionName: name, Payload: JSON.stringify({ probe: appKey ? { appKey } : {} }) }),
    );
    const text = new TextDecoder().decode(res.Payload ?? new Uint8Array());
    if (res.FunctionError) throw new CliError(`the verifier ${name} failed: ${printable(text)}`);
    return JSON.parse(text);
  } finally {
    lambda.destroy();
  }
}

export function register(program: Command): void {
  const storage = program
    .command('storage')
    .description('storage incidents: storages whose uploads fail, the files affected and when to switch storage');
  withCommonOptions(
    storage.command('status').description('open incidents, with their switch-by countdown and latest probe'),
  ).action(async (opts: CommonOptions) => {
    await withTarget(opts, async (ctx) => {
      const statuses = await storageStatus(ctx.target, ctx.now);
      if (opts.json) printJson(statuses);
      else ctx.out(renderStatus(statuses, ctx.c, ctx.now));
    });
  });
  withCommonOptions(
    storage
      .command('probe')
      .description('probe the storages whose settings allow it: the bucket, a canary written, read back and deleted')
      .option('--app-key <appKey>', "only this appKey's storage"),
  ).action(async (opts: CommonOptions & { appKey?: string }) => {
    await withTarget(opts, async (ctx) => {
      const results = await probes(ctx.target, opts.appKey);
      if (opts.json) {
        printJson(results);
        return;
      }
      if (results.length === 0) ctx.out('No storage setting names a storage to probe.');
      for (const r of results)
        ctx.out(styled`${ctx.c.bold(r.storage ?? r.appKey)}  ${r.appKey}  ${probeText(r.probe, ctx.now, ctx.c)}`);
      if (results.some((r) => r.probe && r.probe.result !== 'ok')) setExitCode(1);
    });
  });
}
