import type { AfterHook } from '../../authz/types.js';
import { forgetDatasetExperiments, forgetExperimentNames, forgetPromptFlag, forgetReviewQueue, forgetWrittenTraces } from './forget-hooks.js';
import { filterGatewayListAnswer, followGateway, grantCreatorOfGateway, redactGatewayAnswer, redactSecretsConfig } from './gateway-hooks.js';
import { followModel, grantCreatorOfExperiment, grantCreatorOfModel } from './grant-hooks.js';
import { filterGraphqlAnswer } from './graphql-hook.js';
import { filterStartedJobs, recordJobStarter } from './job-hooks.js';
import { dropMcpServerGrants, grantCreatorOfMcpServer, makeMcpServerParent } from './mcp-server-hooks.js';
import { filterReviewQueues, stampReviewCompletedBy } from './review-hooks.js';
import { dropScorerGrants, filterOnlineConfigs, filterScorerList, grantCreatorOfScorer } from './scorer-hooks.js';
import { filterFoundDatasets, filterSearchAnswer, narrowToReadableExperiments } from './search-hooks.js';
import { dropSkillGrants, grantCreatorOfSkill, registerSkill } from './skill-hooks.js';
import type { HookSpec } from './types.js';
import { verifyAnsweredExperiment } from './verify-hooks.js';
import { dropWorkspaceGrants, filterWorkspaces } from './workspace-hooks.js';

/** Every after-hook the catalog names: what it does, whom it works for, and whether it reads the body. */
export const HOOKS: Readonly<Record<AfterHook, HookSpec>> = {
  grant_creator_experiment: { run: grantCreatorOfExperiment, for: 'everyone', readsBody: false },
  grant_creator_registered_model: { run: grantCreatorOfModel, for: 'everyone', readsBody: true, resolves: true },
  move_registered_model_grants: { run: followModel, for: 'everyone', readsBody: true },
  drop_registered_model_grants: { run: followModel, for: 'everyone', readsBody: true },
  forget_experiment_names: { run: forgetExperimentNames, for: 'everyone', readsBody: false },
  forget_prompt_flag: { run: forgetPromptFlag, for: 'everyone', readsBody: true },
  forget_written_traces: { run: forgetWrittenTraces, for: 'everyone', readsBody: true },
  forget_dataset_experiments: { run: forgetDatasetExperiments, for: 'everyone', readsBody: false },
  forget_review_queue: { run: forgetReviewQueue, for: 'everyone', readsBody: true },
  stamp_review_completed_by: { run: stampReviewCompletedBy, for: 'everyone', readsBody: true },
  filter_review_queues: { run: filterReviewQueues, for: 'non-admins', readsBody: false },
  filter_found_datasets: { run: filterFoundDatasets, for: 'non-admins', readsBody: false },
  filter_search_runs: { run: narrowToReadableExperiments, for: 'non-admins', readsBody: true },
  filter_search_traces: { run: narrowToReadableExperiments, for: 'non-admins', readsBody: true },
  filter_search_experiments: { run: filterSearchAnswer, for: 'non-admins', readsBody: true },
  filter_search_registered_models: { run: filterSearchAnswer, for: 'non-admins', readsBody: true },
  filter_search_model_versions: { run: filterSearchAnswer, for: 'non-admins', readsBody: true },
  filter_search_logged_models: { run: filterSearchAnswer, for: 'non-admins', readsBody: true },
  graphql: { run: filterGraphqlAnswer, for: 'non-admins', readsBody: true },
  verify_answered_experiment: { run: verifyAnsweredExperiment, for: 'non-admins', readsBody: false },
  grant_creator_gateway: { run: grantCreatorOfGateway, for: 'everyone', readsBody: false },
  // The id read from the request, and the name decided on (resolved for administrators too).
  follow_gateway: { run: followGateway, for: 'everyone', readsBody: true, resolves: true },
  redact_gateway_answer: { run: redactGatewayAnswer, for: 'non-admins', readsBody: false },
  filter_gateway_list: { run: filterGatewayListAnswer, for: 'non-admins', readsBody: false },
  redact_secrets_config: { run: redactSecretsConfig, for: 'non-admins', readsBody: false },
  // An administrator's jobs are recorded too: their answers must not be anyone else's.
  record_job_starter: { run: recordJobStarter, for: 'everyone', readsBody: false },
  filter_started_jobs: { run: filterStartedJobs, for: 'non-admins', readsBody: false },
  filter_workspaces: { run: filterWorkspaces, for: 'non-admins', readsBody: false },
  // Only administrators delete workspaces; the name is the path's.
  drop_workspace_grants: { run: dropWorkspaceGrants, for: 'everyone', readsBody: false },
  grant_creator_skill: { run: grantCreatorOfSkill, for: 'everyone', readsBody: false },
  // Makes the Skills resolution marked missing; an administrator's registration is forwarded as it is (MLflow grants administrators nothing either).
  register_skill: { run: registerSkill, for: 'non-admins', readsBody: false },
  drop_skill_grants: { run: dropSkillGrants, for: 'everyone', readsBody: false },
  filter_search_skills: { run: filterSearchAnswer, for: 'non-admins', readsBody: false },
  grant_creator_scorer: { run: grantCreatorOfScorer, for: 'everyone', readsBody: false },
  // The scorer decided on (resolved for administrators too), and whether the body names one version.
  drop_scorer_grants: { run: dropScorerGrants, for: 'everyone', readsBody: true, resolves: true },
  filter_scorer_list: { run: filterScorerList, for: 'non-admins', readsBody: false },
  filter_online_configs: { run: filterOnlineConfigs, for: 'non-admins', readsBody: false },
  grant_creator_mcp_server: { run: grantCreatorOfMcpServer, for: 'everyone', readsBody: false },
  // The server a first version would make is looked up for administrators too: its creator gets MANAGE.
  make_mcp_server_parent: { run: makeMcpServerParent, for: 'everyone', readsBody: false, resolves: true },
  // The name is the path's.
  drop_mcp_server_grants: { run: dropMcpServerGrants, for: 'everyone', readsBody: false },
  filter_search_mcp_servers: { run: filterSearchAnswer, for: 'non-admins', readsBody: false },
  filter_search_mcp_endpoints: { run: filterSearchAnswer, for: 'non-admins', readsBody: false },
};
