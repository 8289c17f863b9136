// Starting and stopping the local stack's HTTP servers (the gateway, dynalite): a port already taken is
// named in the error, and a stop gives the requests in progress a grace period before cutting them off.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function listen(server: Server, port: number, host: string, hint = ''): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use${hint}`) : err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolvePort((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((done) => {
    if (!server.listening) return done();
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(force);
      done();
    });
    server.closeIdleConnections();
  });
}

/** A step of the stop that fails is passed over: the rest must still be stopped. */
export const quietly =
  (step: () => unknown): (() => Promise<void>) =>
  async () => {
    try {
      await step();
    } catch {
      // Keep stopping the rest.
    }
  };
