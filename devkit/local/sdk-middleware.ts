// The part of an AWS SDK v3 client the local stack's checks use: its middleware stack, at the initialize step,
// where a command's input is whole and nothing has been sent yet.

export type CommandInput = Record<string, unknown>;

type Handler = (args: { input: CommandInput }) => Promise<unknown>;

export interface MiddlewareClient {
  middlewareStack: {
    add(
      middleware: (next: Handler, context: Record<string, unknown>) => Handler,
      options: { step: 'initialize'; name: string; priority?: 'high' },
    ): void;
  };
}
