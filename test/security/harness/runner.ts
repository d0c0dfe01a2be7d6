import type { Attack, AttackContext } from './attack.js';
import { observer } from './attack.js';
import type { Caller, Exchange } from './http.js';
import { ownObjects } from './own.js';
import { snapshotDiff, snapshotWorld } from './snapshot.js';
import type { Stack } from './stack.js';
import { seedWorld, type World } from './world.js';

export interface Outcome {
  readonly attack: Attack;
  /** For attacks with a control: whether the replay without flowgate landed. */
  readonly controlLanded?: boolean;
  readonly controlFindings: string[];
  readonly controlTranscript: Exchange[];
  /** Leaks, changes to S and flagged findings of the real attack: each one is a bypass. */
  readonly findings: string[];
  readonly transcript: Exchange[];
}

/**
 * Runs attacks as mallory: first (where the attack has one) its control straight against MLflow on a
 * fresh world, then through flowgate against S, comparing S before and after.
 */
export function attackRunner(stack: Stack, S: World) {
  let current: (e: Exchange) => void = () => {};
  const mallory: Caller = stack.through('mallory', (e) => current(e));
  const admin = stack.through('admin');
  const mlflow = stack.direct();
  // One experiment M for all attacks; her other objects are made fresh by each attack.
  const own = ownObjects(mallory);

  async function execute(attack: Attack, mode: AttackContext['mode'], target: World): Promise<{ findings: string[]; transcript: Exchange[] }> {
    const findings: string[] = [];
    const transcript: Exchange[] = [];
    current = observer(() => target.prefix, findings, transcript);
    const attacker = mode === 'control' ? stack.direct(current) : mallory;
    const grants = mode === 'real' ? admin : undefined;
    const before = await snapshotWorld(target, mlflow, grants);
    const ctx: AttackContext = { mode, target, attack: attacker, mallory, admin, mlflow, own, stack, flag: (reason) => findings.push(reason) };
    try {
      await attack.run(ctx);
    } catch (error) {
      const steps = transcript.map((e) => `  ${e.method} ${e.url} → ${e.status} ${e.text.slice(0, 200)}`).join('\n');
      throw new Error(`${attack.name} (${mode}) could not run: ${(error as Error).message}\n${steps}`);
    } finally {
      current = () => {};
    }
    for (const diff of snapshotDiff(before, await snapshotWorld(target, mlflow, grants))) findings.push(`changed ${diff}`);
    return { findings, transcript };
  }

  return async function runAttack(attack: Attack): Promise<Outcome> {
    let controlLanded: boolean | undefined;
    let controlFindings: string[] = [];
    let controlTranscript: Exchange[] = [];
    if (attack.control !== 'none') {
      const world = await seedWorld(mlflow, 'ctl');
      ({ findings: controlFindings, transcript: controlTranscript } = await execute(attack, 'control', world));
      controlLanded = controlFindings.length > 0;
    }
    const real = await execute(attack, 'real', S);
    return { attack, controlLanded, controlFindings, controlTranscript, ...real };
  };
}
