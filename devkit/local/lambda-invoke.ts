// A local function as its callers see it, and the error it fails with: apart from the runtime that runs
// handlers, so that what wraps a handler (the faults) can raise the runtime's errors without importing it.

/** The error Lambda reports for an invocation that failed for the runtime, not for the handler. */
export class LambdaRuntimeError extends Error {
  readonly errorType: string;
  constructor(errorType: string, message: string) {
    super(message);
    this.name = errorType;
    this.errorType = errorType;
  }
}

export type LocalInvoke = (event: unknown) => Promise<unknown>;
