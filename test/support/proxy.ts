// A TCP proxy in front of a real server: cutting it ends every open connection (a config stream
// included) and refuses new ones until it is opened again — a network outage between a client
// and the service, with neither of them changed.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface Proxy {
  /** `http://127.0.0.1:{port}`: the server's address as clients behind the proxy use it. */
  baseUrl: string;
  /** Ends every open connection; with `refuse`, new ones too until open(). */
  cut(options?: { refuse?: boolean }): void;
  open(): void;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    cut(options) {
      refusing = options?.refuse ?? false;
      for (const socket of sockets) socket.destroy();
    },
    open() {
      refusing = false;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
