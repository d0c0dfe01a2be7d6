import { readField } from '../../authz/resolve.js';
import type { MappingChange } from '../../store/mapping-changes.js';
import { onceAnswered } from '../after/relay.js';
import { hookFailed, type Hook, type HookCall } from './types.js';

/**
 * A request that changes an MLflow mapping flowgate caches: forgotten here before forwarding (so no
 * look-up racing the change keeps the old value) and everywhere once MLflow has answered. The answer
 * itself is never read (an OTLP export's is an empty protobuf body), and any answer counts: MLflow
 * may have written before it failed, and forgetting a mapping that did not change costs one look-up.
 */
function forgetting(changes: (call: HookCall) => MappingChange[]): Hook {
  return (call, ctx) => {
    const changed = changes(call);
    if (changed.length === 0) return {};
    ctx.mappings.forgetHere(changed);
    return { onResponse: onceAnswered(() => changed.forEach((change) => ctx.mappings.forget(change)), hookFailed(ctx, call.hook)) };
  };
}

/** A rename, delete or restore: the old name is not in the request, so every cached name goes. */
export const forgetExperimentNames = forgetting(() => [{ cache: 'experiment_names', key: '' }]);

/** A tag set or removed on a model may turn it into a prompt or back. */
export const forgetPromptFlag = forgetting(({ entry, request }) => readField(entry.id, request).map((key) => ({ cache: 'model', key })));

/** Traces named by the client (start, OTLP) may have been moved or created. */
export const forgetWrittenTraces = forgetting(({ entry, request }) =>
  (entry.also ?? []).filter((check) => check.clientChosen).flatMap((check) => readField(check.id, request).map((key) => ({ cache: 'trace' as const, key }))),
);

/** Experiments were added to or removed from a dataset, or it was deleted. */
export const forgetDatasetExperiments = forgetting(({ request }) =>
  request.params.dataset_id === undefined ? [] : [{ cache: 'dataset', key: request.params.dataset_id }],
);

/** A review queue's users changed, or it was deleted. */
export const forgetReviewQueue = forgetting(({ entry, request }) => readField(entry.id, request).slice(0, 1).map((key) => ({ cache: 'review_queue', key })));
