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
