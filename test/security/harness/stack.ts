import { dirname, join } from 'node:path';
import { ADMIN, adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../../helpers/mlflow-server.js';
import { caller, ok, type Caller, type Exchange } from './http.js';
import { V2 } from './world.js';

/** The real MLflow with proxied artifacts, flowgate in front of it, and the attacker's account. */
export interface Stack {
  readonly mlflow: MlflowServer;
  readonly fg: TestFlowgate;
  /** MLflow's SQLite backend store, for `mlflow gc`. */
  readonly backendStoreUri: string;
  readonly users: Record<string, { token: string; auth: string }>;
  /** An identity through flowgate; every exchange goes to `observe`. */
  through(user: string, observe?: (e: Exchange) => void): Caller;
  /** MLflow itself, without flowgate. */
  direct(observe?: (e: Exchange) => void): Caller;
  stop(): Promise<void>;
}

const quiet = () => {};

export async function startStack(userNames: readonly string[]): Promise<Stack> {
  const mlflow = await startMlflowServer();
  let fg: TestFlowgate | undefined;
  try {
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    const admin = caller(fg.url, adminAuth(), quiet);
    const users: Stack['users'] = { [ADMIN.username]: { token: ADMIN.token, auth: adminAuth() } };
    const expiration = new Date(Date.now() + 86_400_000).toISOString();
    for (const username of userNames) {
      ok(await admin('POST', `${V2}/users/create`, { body: { username } }), `create user ${username}`);
      const token = ok(await admin('PATCH', `${V2}/permissions/users/access-token`, { body: { username, expiration } }), 'mint token').token as string;
      users[username] = { token, auth: basic(username, token) };
    }
    const running = fg;
    return {
      mlflow,
      fg: running,
      backendStoreUri: `sqlite:///${join(dirname(mlflow.artifactsDir), 'mlflow.db')}`,
      users,
      through: (user, observe = quiet) => caller(running.url, users[user]!.auth, observe),
      direct: (observe = quiet) => caller(mlflow.url, undefined, observe),
      async stop() {
        await running.close();
        removeDir(running.dir);
        await mlflow.stop();
      },
    };
  } catch (error) {
    if (fg) await fg.close();
    await mlflow.stop();
    throw error;
  }
}
