import { describe, expect, it } from 'vitest';
import { judgeEndpoints, reflectionEndpoint, sourcePromptName } from '../../src/authz/job-inputs.js';
import { FlowgateError } from '../../src/errors.js';

const badRequest = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e instanceof FlowgateError && e.code === 'INVALID_PARAMETER_VALUE';
  }
  return false;
};

describe('the prompt a prompt-optimization job loads', () => {
  it.each([
    ['prompts:/tone/1', 'tone'],
    ['prompts:/tone/12', 'tone'],
    ['prompts:/tone@latest', 'tone'],
    ['prompts:/team.tone-v2_x@champion', 'team.tone-v2_x'],
    ['tone', 'tone'],
  ])('%s → %s', (uri, name) => {
    expect(sourcePromptName(uri)).toBe(name);
  });

  it.each([
    'PROMPTS:/tone/1',
    ' prompts:/tone/1',
    'prompts://host/tone/1',
    'prompts:/tone/1?x=1',
    'prompts:/tone',
    'prompts:/tone/latest',
    'prompts:/tone/1/2',
    'prompts:/tone@a@b',
    'prompts:tone/1',
    'models:/tone/1',
    'tone@latest',
    'to ne',
    'tone\t',
    '',
    'prompts:/%74one/1',
  ])('refuses %j (read two ways, or not a prompt)', (uri) => {
    expect(badRequest(() => sourcePromptName(uri))).toBe(true);
  });
});

describe("the endpoint an optimizer's reflection model calls", () => {
  it.each([
    ['{"reflection_model": "gateway:/reflector"}', 'reflector'],
    ['{"reflection_model": "gateway:///reflector"}', 'reflector'],
    ['{"reflection_model": "openai:/gpt-4o"}', undefined],
    ['{"reflection_model": null}', undefined],
    ['{"max_metric_calls": 3}', undefined],
  ])('%s → %s', (config, endpoint) => {
    expect(reflectionEndpoint(config)).toBe(endpoint);
  });

  it.each(['not json', '[1]', '"gateway:/x"', '{"reflection_model": 3}', '{"reflection_model": "Gateway:/x"}', '{"reflection_model": " gateway:/x"}', '{"reflection_model": "gateway:/"}'])(
    'refuses %s',
    (config) => {
      expect(badRequest(() => reflectionEndpoint(config))).toBe(true);
    },
  );
});

describe('the endpoints the judges of a serialized scorer call', () => {
  const judge = (model: unknown) => JSON.stringify({ name: 'j', instructions_judge_pydantic_data: { instructions: 'x', model } });
  it('finds every gateway model at any depth, once each', () => {
    expect(judgeEndpoints(judge('gateway:/chat'), 'serialized_scorer')).toEqual(['chat']);
    expect(judgeEndpoints(judge('openai:/gpt-4o'), 'serialized_scorer')).toEqual([]);
    const ensemble = JSON.stringify({
      ensemble_scorer_data: { members: [{ model: 'gateway:/a' }, { builtin_scorer_pydantic_data: { model: 'gateway:///b' } }, { model: 'gateway:/a' }] },
    });
    expect(judgeEndpoints(ensemble, 'serialized_scorer').sort()).toEqual(['a', 'b']);
    // A `model` that is not a string names no endpoint (MLflow's own validation answers it).
    expect(judgeEndpoints(judge({ model: 'gateway:/nested' }), 'serialized_scorer')).toEqual(['nested']);
  });

  it.each([judge('Gateway:/chat'), judge(' gateway:/chat'), judge('gateway:/'), 'not json', JSON.stringify(JSON.parse(JSON.stringify(Array.from({ length: 40 }).reduce((n) => ({ x: n }), {}))))])(
    'refuses %s',
    (text) => {
      expect(badRequest(() => judgeEndpoints(text, 'serialized_scorer'))).toBe(true);
    },
  );
});
