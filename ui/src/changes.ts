import { api } from './api';
import type { ConfirmRequest } from './components';

/** What the confirmation says: its title, the change in words, and its button. */
export type Asking = Pick<ConfirmRequest, 'title' | 'text' | 'action'>;

/** A change the admin API makes once confirmed: `method` on `path` with `body`; then `after` (to empty a form, say). */
export const change = (asking: Asking, method: 'POST' | 'PATCH', path: string, body: unknown, after?: () => void): ConfirmRequest => ({
  ...asking,
  run: async () => {
    await api(method, path, body);
    after?.();
  },
});

/** A removal (or revocation) once confirmed: `DELETE` of `path`, its button in red. */
export const removal = (asking: Asking, path: string): ConfirmRequest => ({ ...asking, danger: true, run: () => api('DELETE', path) });
