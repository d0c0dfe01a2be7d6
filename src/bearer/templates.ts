/**
 * A kubernetes issuer's `username_template` and `namespace_group` as the set of names they can make,
 * so that no two issuers, and no token of an OIDC issuer, can make a name of another's: a dev cluster's
 * `team-a:intruder` in prod's `k8s:team-a`, an OIDC token's `groups: ["k8s:team-a"]` in it, or an OIDC
 * token squatting `k8s.team-b.pipelines` before the real service account's first call.
 *
 * A placeholder stands for what Kubernetes allows there (src/bearer/verify.ts, K8S_SUBJECT), widened
 * to any length and any order of its characters: `{namespace}` one or more of `[a-z0-9-]` (a DNS
 * label), `{name}` one or more of `[a-z0-9.-]` (a DNS subdomain). Everything else is literal.
 */

type Part = { readonly literal: string } | { readonly chars: RegExp };

const NAMESPACE_CHARS = /[a-z0-9-]/;
const NAME_CHARS = /[a-z0-9.-]/;

function parts(template: string): Part[] {
  const out: Part[] = [];
  for (const piece of template.split(/(\{namespace\}|\{name\})/)) {
    if (piece === '{namespace}') out.push({ chars: NAMESPACE_CHARS });
    else if (piece === '{name}') out.push({ chars: NAME_CHARS });
    else for (const c of piece) out.push({ literal: c });
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether `value` is a name the template can make, ignoring case: flowgate refuses to make a user
 * whose name another holds in another case (oidc/provision.ts nameInOtherCase), so `K8S.team-b.x`
 * would squat `k8s.team-b.x` as surely as the exact name.
 */
export function templateMatcher(template: string): RegExp {
  const source = parts(template)
    .map((p) => ('literal' in p ? escape(p.literal) : `${p.chars.source}+`))
    .join('');
  return new RegExp(`^${source}$`, 'i');
}

/**
 * Whether two templates can make one same name (for any namespaces and names): the intersection of
 * the two languages, walked as pairs of positions (each template a small automaton: a literal is one
 * step, a placeholder one step then a loop). Case is ignored, as in templateMatcher.
 */
export function templatesOverlap(a: string, b: string): boolean {
  const pa = parts(a.toLowerCase());
  const pb = parts(b.toLowerCase());
  // The characters that can tell positions apart: every literal, and one of each placeholder class.
  const alphabet = new Set<string>(['a', '-', '.']);
  for (const p of [...pa, ...pb]) if ('literal' in p) alphabet.add(p.literal);
  const steps = (ps: Part[], i: number, c: string): number[] => {
    const next: number[] = [];
    const at = ps[i];
    if (at && ('literal' in at ? at.literal === c : at.chars.test(c))) next.push(i + 1);
    // After a placeholder's first character, more of its characters stay there.
    const before = ps[i - 1];
    if (i > 0 && before && 'chars' in before && before.chars.test(c)) next.push(i);
    return next;
  };
  const seen = new Set<string>(['0,0']);
  const queue: Array<[number, number]> = [[0, 0]];
  while (queue.length > 0) {
    const [i, j] = queue.shift()!;
    if (i === pa.length && j === pb.length) return true;
    for (const c of alphabet)
      for (const ni of steps(pa, i, c))
        for (const nj of steps(pb, j, c)) {
          const key = `${ni},${nj}`;
          if (!seen.has(key)) {
            seen.add(key);
            queue.push([ni, nj]);
          }
        }
  }
  return false;
}
