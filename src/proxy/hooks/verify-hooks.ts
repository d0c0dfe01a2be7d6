import { forbidden } from '../../errors.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook } from './types.js';

/**
 * A look-up by name was decided on the id flowgate resolved (possibly from its cache); MLflow answers
 * for whichever experiment holds the name when it runs. An answer about another experiment is
 * refused, so a stale mapping can never show an experiment the decision did not cover.
 */
export const verifyAnsweredExperiment: Hook = ({ refs, req, hook, principal }, ctx) => {
  const decided = refs[0]?.id;
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const answered = obj(obj(json).experiment).experiment_id;
        if (answered !== decided) {
          ctx.mappings.forget({ cache: 'experiment_names', key: '' });
          throw forbidden(`Permission denied: ${principal.username} may not read the experiment that now has this name; try again`, 'answer-changed');
        }
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};
