/** A throwaway PostgreSQL cluster on 127.0.0.1, in a temporary directory, trust authentication. */
export interface PostgresServer {
  readonly port: number;
  /** A URL for `database` on this server (default `postgres`). */
  url(database?: string): string;
  /** A new empty database; its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server (fast shutdown), keeping the data: `start()` brings it back on the same port. */
  pause(): Promise<void>;
  start(): Promise<void>;
  /** The postmaster's pid. */
  readonly pid: number | undefined;
  /** SIGSTOP to the postmaster and each of its processes: it holds its sockets and answers nothing. Pair with `thaw()` in a finally. */
  freeze(): void;
  /** SIGCONT: the frozen server goes on where it stopped. */
  thaw(): void;
  logs(): string;
  /** Stops the server and removes the cluster. */
  stop(): Promise<void>;
}
export function postgresBinDir(): string | undefined;
export interface StartOptions {
  /** Extra server settings, each passed as `-c name=value`. */
  readonly settings?: Readonly<Record<string, string>>;
  /**
   * Runs before the server starts: write files into `dir` (the cluster's directory) and hand them to the
   * server's user with `chown`; the settings it returns are added (paths to those files, say).
   */
  readonly prepare?: (at: { readonly dir: string; chown(path: string): void }) => Readonly<Record<string, string>> | void;
}
export function startPostgres(options?: StartOptions): Promise<PostgresServer>;
