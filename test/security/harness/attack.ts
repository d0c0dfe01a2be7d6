import type { Caller, Exchange } from './http.js';
import type { OwnObjects } from './own.js';
import type { Stack } from './stack.js';
import type { World } from './world.js';

/**
 * How an attack proves it is real:
 * - `direct`: replayed first against MLflow without flowgate, on a fresh world; it must land there
 *   (leak or change), or it proves nothing when flowgate holds it.
 * - `mlflow-refuses`: MLflow itself refuses it; the replay must not land (a neighbour kept so an
 *   MLflow upgrade that starts accepting it is noticed).
 * - `none`: it attacks flowgate's own state (grants, cached mappings) and checks that itself.
 */
export type ControlKind = 'direct' | 'mlflow-refuses' | 'none';

export interface AttackContext {
  readonly mode: 'control' | 'real';
  /** The world under attack: S for the real run, a fresh copy for a control. */
  readonly target: World;
  /** The attacker's requests under test: through flowgate as mallory, or straight to MLflow in a control. */
  readonly attack: Caller;
  /** Mallory through flowgate, for setting up her own objects. */
  readonly mallory: Caller;
  /** The administrator through flowgate. */
  readonly admin: Caller;
  /** MLflow directly, for the attack's own checks. */
  readonly mlflow: Caller;
  readonly own: OwnObjects;
  readonly stack: Stack;
  /** Records a bypass the attack detected itself (beyond leaks and changes to the world). */
  flag(reason: string): void;
}

export interface Attack {
  readonly name: string;
  readonly class: string;
  readonly control: ControlKind;
  run(ctx: AttackContext): Promise<void>;
}

export interface Verdict {
  /** A leaked marker, a change to the world, or a flagged finding. */
  readonly findings: string[];
  readonly transcript: Exchange[];
}

/** Scans every exchange of the attacker for the world's marker prefix and keeps a transcript. */
export function observer(prefix: () => string, findings: string[], transcript: Exchange[]): (e: Exchange) => void {
  return (e) => {
    transcript.push(e);
    const at = e.text.indexOf(prefix());
    if (at >= 0) findings.push(`leak in ${e.method} ${new URL(e.url).pathname} → ${e.status}: …${e.text.slice(Math.max(0, at - 40), at + 80)}…`);
  };
}
