// Every AWS SDK client a function builds passes through `functionClient`: deployed it returns the client as
// it is; the local stack sets a hook here while it loads a function's module, which adds to each of that
// function's clients the check of its calls against the function's role (lib/local/iam/enforce.ts).
export type ClientHook = (client: object) => void;

let hook: ClientHook | undefined;

/** Sets the hook the clients built from now on get (undefined: none); returns the previous one. */
export function setClientHook(next: ClientHook | undefined): ClientHook | undefined {
  const previous = hook;
  hook = next;
  return previous;
}

export function functionClient<T extends object>(client: T): T {
  hook?.(client);
  return client;
}
