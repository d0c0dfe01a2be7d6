import { adminAuth } from './flowgate.js';

/** A judge as MLflow's Python client serializes one (`make_judge(...).model_dump()`): instructions and a model, no code. */
export const serializedJudge = (name: string, instructions = 'Is {{ outputs }} helpful?', model = 'openai:/gpt-4o-mini') =>
  JSON.stringify({
    name,
    aggregations: ['mean'],
    description: null,
    is_session_level_scorer: false,
    timeout: 0,
    mlflow_version: '3.17.2',
    serialization_version: 1,
    builtin_scorer_class: null,
    builtin_scorer_pydantic_data: null,
    call_source: null,
    call_signature: null,
    original_func_name: null,
    instructions_judge_pydantic_data: { instructions, model, feedback_value_type: { title: 'Result', type: 'boolean' } },
    memory_augmented_judge_data: null,
    third_party_scorer_data: null,
    ensemble_scorer_data: null,
  });

type Answer = { status: number; body: unknown };

/**
 * MLflow's `scorers/get` and `gateway/endpoints/get` for a scripted MLflow: version 1 of each stored
 * scorer in experiment 1, found also under the other spellings `collated` maps (a case-insensitive
 * database); undefined for every other path.
 */
export function storedScorersAnswer(stored: Readonly<Record<string, string>>, collated: Readonly<Record<string, string>>) {
  return (url: URL): Answer | undefined => {
    const q = url.searchParams;
    if (url.pathname === '/api/3.0/mlflow/scorers/get') {
      const name = collated[q.get('name') ?? ''] ?? q.get('name') ?? '';
      if (q.get('experiment_id') !== '1' || q.get('version') !== '1' || stored[name] === undefined)
        return { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'Scorer not found' } };
      return { status: 200, body: { scorer: { experiment_id: 1, scorer_name: name, scorer_version: 1, serialized_scorer: stored[name], creation_time: 1, scorer_id: 'sc-1' } } };
    }
    if (url.pathname === '/api/3.0/mlflow/gateway/endpoints/get') return { status: 200, body: { endpoint: { endpoint_id: 'e-1', name: q.get('name') } } };
    return undefined;
  };
}

/** A JSON call through flowgate as `who` (Basic, from jsonCaller's tokens): the answer as fetch gives it. */
export const callingAs =
  (url: () => string, basicOf: (who: string) => string) =>
  (who: string, method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(url() + path, {
      method,
      headers: { Authorization: basicOf(who), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

export interface JobState {
  status?: string;
  error_message?: string | null;
}

/** An MLflow job polled as `who` until it ends, or for two minutes. */
export async function pollJob(as: ReturnType<typeof callingAs>, who: string, jobId: string): Promise<JobState> {
  let job: JobState = {};
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const polled = await as(who, 'GET', `/ajax-api/3.0/mlflow/jobs/${jobId}`);
    if (polled.status !== 200) throw new Error(`polling job ${jobId}: ${polled.status} ${await polled.text()}`);
    job = (await polled.json()) as JobState;
    if (job.status === 'SUCCEEDED' || job.status === 'FAILED' || job.status === 'TIMEOUT') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return job;
}

/**
 * Mallory of the scorer attack files: a user with EDIT on experiment 1, READ on its scorers `reads`,
 * nothing on `secret-judge`, READ (listing, not spending) on `secret-endpoint`, and `grants` besides
 * (paths under `/api/2.0/mlflow/permissions/users/mallory/`). Her token.
 */
export async function scorerAttacker(url: string, reads: readonly string[], grants: Readonly<Record<string, string>> = {}): Promise<string> {
  const admin = async (method: 'POST' | 'PATCH', path: string, body: object) => {
    const res = await fetch(url + path, { method, headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const permissions = '/api/2.0/mlflow/permissions/users/mallory';
  await admin('POST', '/api/2.0/mlflow/users/create', { username: 'mallory' });
  const { token } = await admin('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'mallory' });
  const all: Record<string, string> = {
    'experiments/1': 'EDIT',
    ...Object.fromEntries(reads.map((name) => [`scorers/1/${name}`, 'READ'])),
    'scorers/1/secret-judge': 'NO_PERMISSIONS',
    'gateways/endpoints/secret-endpoint': 'READ',
    ...grants,
  };
  for (const [path, permission] of Object.entries(all)) await admin('POST', `${permissions}/${path}`, { permission });
  return token as string;
}
