import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A page or endpoint flowgate serves itself under the base path (sign-in, callbacks, the UI),
 * tried after normalization and before authentication: true when it answered.
 */
export type OwnRoute = (
  req: IncomingMessage,
  res: ServerResponse,
  ctx: { path: string; search: string; requestId: string },
) => boolean | Promise<boolean>;
