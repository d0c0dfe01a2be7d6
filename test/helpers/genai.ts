import { startStubUpstream } from './flowgate.js';
import { runPython } from './mlflow-server.js';

/**
 * What the GenAI tests share: a fake OpenAI-compatible provider on loopback, gateway endpoints on it made
 * by the administrator, and traces logged with the real Python client.
 */

/** MLflow's settings that let its gateway call a provider on loopback over http, and run jobs. */
export const GENAI_MLFLOW_ENV = {
  MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'true',
  MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES: 'http,https',
  MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS: 'true',
} as const;

/** A chat-completions provider answering `content(requestBody)` as the assistant's message. */
export function startFakeProvider(content: (body: string) => string) {
  return startStubUpstream((req) => ({
    status: 200,
    body: {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: content(req.body) }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    },
  }));
}

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;
const GW = '/api/3.0/mlflow/gateway';

/** A secret and a model definition on the provider, and an endpoint on it for each name (as the administrator). */
export async function endpointsOnProvider(call: Call, providerUrl: string, prefix: string, endpoints: readonly string[]): Promise<{ secretId: string }> {
  const secret = await call('POST', `${GW}/secrets/create`, {
    secret_name: `${prefix}-key`,
    secret_value: { api_key: 'sk-fake-for-tests' },
    provider: 'openai',
    auth_config: { api_base: `${providerUrl}/v1` },
  });
  const secretId = (secret.secret as { secret_id: string }).secret_id;
  const definition = await call('POST', `${GW}/model-definitions/create`, { name: `${prefix}-def`, secret_id: secretId, provider: 'openai', model_name: 'gpt-4o-mini' });
  const definitionId = (definition.model_definition as { model_definition_id: string }).model_definition_id;
  for (const name of endpoints) await call('POST', `${GW}/endpoints/create`, { name, model_configs: [{ model_definition_id: definitionId, linkage_type: 'PRIMARY', weight: 1 }] });
  return { secretId };
}

/** Logs one trace per question into the experiment with the real Python client as `username`; their ids. */
export async function logTraces(venv: string, trackingUri: string, username: string, token: string, experimentId: string, questions = ['first', 'second']): Promise<string[]> {
  const traced = await runPython(
    venv,
    `
import json, mlflow
mlflow.set_experiment(experiment_id=${JSON.stringify(experimentId)})
@mlflow.trace
def answer(question):
    return "Thank you kindly for asking!"
ids = []
for q in ${JSON.stringify(questions)}:
    answer(q)
    ids.append(mlflow.get_last_active_trace_id())
print("@@IDS@@" + json.dumps(ids))
`,
    {
      MLFLOW_TRACKING_URI: trackingUri,
      MLFLOW_TRACKING_USERNAME: username,
      MLFLOW_TRACKING_PASSWORD: token,
      MLFLOW_ENABLE_ASYNC_TRACE_LOGGING: 'false',
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
    },
  );
  const line = traced.stdout.split('\n').find((l) => l.startsWith('@@IDS@@'));
  if (!line) throw new Error(`tracing as ${username} failed:\n${traced.stderr.slice(-3000)}`);
  return JSON.parse(line.slice('@@IDS@@'.length)) as string[];
}
