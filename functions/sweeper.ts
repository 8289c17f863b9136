// Lambda entry for the sweeper, on a schedule (serverless.yml): finds the facts of time that are due (lost
// files, purge warnings, stalled and settled tasks) and publishes them. The handler is built once per container,
// at load, from the function's environment. The logic lives in lib/sweeper/.
import { createSweeperHandler } from '../lib/sweeper/handler.ts';

export const handler = createSweeperHandler(process.env);
