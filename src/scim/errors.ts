import SCIMMY from 'scimmy';
import { FlowgateError } from '../errors.js';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimType = 'uniqueness' | 'invalidFilter' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'tooMany';

/** A refusal in SCIM's shape (RFC 7644 §3.12); `detail` is safe to show (it never carries a token). */
export class ScimError extends SCIMMY.Types.Error {
  constructor(status: number, scimType: ScimType | null, detail: string) {
    // scimmy rethrows its own error type untouched from inside a handler, whatever the status.
    super(status, scimType as never, detail);
  }
}

export interface ScimErrorBody {
  readonly schemas: readonly [typeof SCIM_ERROR_SCHEMA];
  readonly status: string;
  readonly scimType?: string;
  readonly detail: string;
}

export const scimErrorBody = (status: number, detail: string, scimType?: string | null): ScimErrorBody => ({
  schemas: [SCIM_ERROR_SCHEMA],
  status: String(status),
  ...(scimType ? { scimType } : {}),
  detail,
});

/** flowgate's own refusals (a name taken, the bootstrap admin, the store down) as SCIM errors. */
export function toScimError(e: unknown): unknown {
  if (!(e instanceof FlowgateError)) return e;
  if (e.status === 409) return new ScimError(409, 'uniqueness', e.message);
  if (e.status === 400) return new ScimError(400, 'invalidValue', e.message);
  return new ScimError(e.status, null, e.message);
}

/** Runs a resource handler with flowgate's errors turned into SCIM's (scimmy would call any other a 404). */
export const scimErrors =
  <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    try {
      return await fn(...args);
    } catch (e) {
      throw toScimError(e);
    }
  };
