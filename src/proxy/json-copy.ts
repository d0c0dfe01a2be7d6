/**
 * A shallow copy of an object a client sent as JSON, with `changes` over it. The fields are put on an
 * object without a prototype, so they are defined as a spread defines them: a `__proto__` key stays an
 * ordinary field, sent on as MLflow would read it (assigned onto `{}`, it would become the copy's
 * prototype, whose fields flowgate would read but never send). Not a spread: on Node 20 a spread given
 * further properties is allocated in the old generation (test/unit/request-path-spreads.test.ts).
 */
export function jsonCopy(value: Record<string, unknown>, changes?: Record<string, unknown>): Record<string, unknown> {
  return Object.assign(Object.create(null) as Record<string, unknown>, value, changes);
}
