// `callbacks doctor`: the template packaged and linted, and every function's calls on the local stack held
// to its role (devkit/local/doctor.ts). Exit code 0 only when no call lacks a grant and cfn-lint found no error.
import type { Command } from 'commander';
import { type ArchiveCheck, CFN_LINT_INSTALL, type DoctorReport, runDoctor } from '../../devkit/local/doctor.ts';
import { colorsFor, type Colors } from '../format.ts';
import { cliIo, setExitCode } from '../io.ts';

interface DoctorOptions {
  json?: boolean;
  color?: boolean;
}

/** The archive's line: its stream, the worker's grant to write it, what the stand-in took. */
function archiveLine(a: ArchiveCheck, c: Colors): string {
  if (a.stream === null) return `${c.bold('archive')}  ${c.red('the template has no archive stream')}`;
  const facts = [
    a.workerStream === a.stream
      ? `the worker archives to it`
      : c.red(`the worker's ARCHIVE_STREAM names ${a.workerStream ? a.workerStream : 'no stream'}`),
    a.grantedBy ? `may PutRecordBatch ${c.dim(`<- ${a.grantedBy}`)}` : c.red('PutRecordBatch NOT GRANTED'),
    a.linesArchived > 0
      ? `the local stand-in archived ${a.linesArchived} line(s)`
      : c.red('the local stand-in archived nothing'),
  ];
  return `${c.bold('archive')}  stream ${a.stream}: ${facts.join(', ')}`;
}

export function describeReport(report: DoctorReport, c: Colors): string {
  const lines: string[] = [];
  const t = report.template;
  lines.push(`${c.bold('template')}  ${t.path}  ${c.dim(t.packaged ? '(packaged now)' : '(cached)')}`);
  const lint = report.cfnLint;
  if (!lint.installed) lines.push(`${c.bold('cfn-lint')}  not installed, skipped (install it: ${CFN_LINT_INSTALL})`);
  else {
    const verdict = lint.errors ? c.red('errors') : lint.exitCode === 0 ? c.green('clean') : 'warnings only';
    lines.push(`${c.bold('cfn-lint')}  ${lint.version}: ${verdict}`);
    if (lint.output) lines.push(...lint.output.split('\n').map((l) => `  ${l}`));
  }
  for (const fn of report.functions) {
    lines.push('', `${c.bold(fn.key)}  ${c.dim(`role ${fn.role}`)}`);
    for (const call of fn.calls) {
      const grant = call.grantedBy ? c.dim(`<- ${call.grantedBy}`) : c.red('NOT GRANTED');
      lines.push(`  ${call.action.padEnd(26)} ${call.resource}  ${grant}`);
    }
  }
  lines.push('', archiveLine(report.archive, c), '');
  if (report.scenarioError) lines.push(c.red(`The scenario failed: ${report.scenarioError}`));
  lines.push(
    report.ok
      ? c.green('Every call is granted, and the archive is written.')
      : c.red(
          `${report.gaps} call(s) without a grant${lint.installed && lint.errors ? ', cfn-lint errors' : ''}` +
            `${report.archive.ok ? '' : ', the archive not written'}.`,
        ),
  );
  return `${lines.join('\n')}\n`;
}

export function register(program: Command): void {
  program
    .command('doctor')
    .description(
      'before "serverless deploy": package the template, run cfn-lint when installed, and run every function on ' +
        'the local stack with IAM enforced; list its calls and the grants that cover them (exit 1 on a gap)',
    )
    .option('--json', 'the report as JSON')
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .action(async (opts: DoctorOptions) => {
      cliIo().stderr.write('Packaging, linting and running the local stack with IAM enforced...\n');
      const report = await runDoctor();
      cliIo().stdout.write(
        opts.json ? `${JSON.stringify(report, null, 2)}\n` : describeReport(report, colorsFor(opts)),
      );
      if (!report.ok) setExitCode(1);
    });
}
