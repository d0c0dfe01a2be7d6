import { forbidden, unauthenticated } from '../errors.js';
import type { GatePass, GateRequest, MlflowGate } from './gate.js';

/** Forwards nothing but administrators' requests: the fail-closed gate used before enforcement exists. */
export const adminOnlyGate: MlflowGate = {
  authorize(r: GateRequest): Promise<GatePass> {
    if (r.notes) r.notes.route = 'mlflow';
    if (!r.principal) return Promise.reject(unauthenticated());
    if (!r.principal.isAdmin) return Promise.reject(forbidden('Only administrators may reach MLflow through flowgate'));
    return Promise.resolve({ routeTemplate: 'mlflow', reason: 'admin' });
  },
};
