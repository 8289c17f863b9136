// `callbacks console --stage S --region R`: the console for a deployed stage, on 127.0.0.1, until Ctrl-C.
// The read API's calls are signed here with the operator's AWS credentials (cli/console-proxy.ts), for the
// browser that opens the address printed, with its token, only. The local stack serves the console itself
// (`callbacks dev`, /console/).
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { InvalidArgumentError, type Command } from 'commander';
import { SERVICE } from '../../devkit/local/deployed-settings.ts';
import { errorSentence } from '../../lib/text.ts';
import { ensureConsoleBuilt } from '../console-assets.ts';
import { insecureApiUrl, startConsoleProxy } from '../console-proxy.ts';
import { stackOutput } from '../stack-outputs.ts';
import { httpUrl, portNumber } from '../option-parsers.ts';
import { cliIo } from '../io.ts';

interface ConsoleOptions {
  stage: string;
  region?: string;
  url?: string;
  port: number;
}

export const DEFAULT_CONSOLE_PORT = 3100;

export function register(program: Command): void {
  program
    .command('console')
    .description(
      "the console for a deployed stage on 127.0.0.1, reading the stage's read API with your AWS credentials",
    )
    .requiredOption('--stage <stage>', 'the deployed stage')
    .option('--region <region>', 'its AWS region (default: AWS_REGION)')
    .option(
      '--url <HttpApiUrl>',
      "the stage's API base URL, https:// (default: the HttpApiUrl output of its CloudFormation stack, looked up)",
      (text: string) => {
        const url = httpUrl(text);
        const insecure = insecureApiUrl(url);
        if (insecure) throw new InvalidArgumentError(`${insecure}.`);
        return url;
      },
    )
    .option('--port <port>', 'port on 127.0.0.1 (0: any free port)', portNumber, DEFAULT_CONSOLE_PORT)
    .action(async (opts: ConsoleOptions) => {
      const region = opts.region ?? cliIo().env.AWS_REGION ?? cliIo().env.AWS_DEFAULT_REGION;
      if (!region) throw new Error(`stage ${opts.stage} needs a region: pass --region or set AWS_REGION`);
      const provider = defaultProvider();
      let credentials: Awaited<ReturnType<typeof provider>>;
      try {
        credentials = await provider();
      } catch (err) {
        throw new Error(`no AWS credentials were found (environment, profile, SSO or role): ${errorSentence(err)}`);
      }
      const stackName = `${cliIo().env.CALLBACKS_SERVICE_NAME ?? SERVICE}-${opts.stage}`;
      const apiUrl = opts.url ?? (await stackOutput({ stackName, outputKey: 'HttpApiUrl', region, credentials }));
      const proxy = await startConsoleProxy({
        apiUrl,
        region,
        credentials: provider,
        consoleDir: await ensureConsoleBuilt(),
        port: opts.port,
      });
      cliIo().stdout.write(
        `Console of stage ${opts.stage} (${region}) at ${proxy.openUrl}\n` +
          `Reading ${apiUrl} signed with your AWS credentials, for this address only (its token is this run's); ` +
          'Ctrl-C stops it.\n',
      );
      let stopListening = () => {};
      await new Promise<void>((resolve) => {
        stopListening = cliIo().onStop(resolve);
      });
      stopListening();
      await proxy.stop();
    });
}
