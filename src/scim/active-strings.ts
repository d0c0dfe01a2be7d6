/**
 * Entra ID's provisioning sends a user's `active` in PATCH as the strings `"True"` / `"False"`
 * (a deviation Microsoft lists among its SCIM compatibility issues), which scimmy refuses as not a
 * boolean: its de-provisioning of a leaver then failed with a 400 and the user stayed enabled. The
 * two words (any case) are read as the booleans they mean, for `active` alone; any other string is
 * left for scimmy to refuse. Mutates the freshly parsed body.
 */
export function activeStringsAsBooleans(body: unknown): unknown {
  const operations = (body as { Operations?: unknown } | null | undefined)?.Operations;
  if (!Array.isArray(operations)) return body;
  for (const op of operations) {
    if (op === null || typeof op !== 'object') continue;
    const o = op as Record<string, unknown>;
    if (typeof o.path === 'string') {
      if (namesActive(o.path)) o.value = asBoolean(o.value);
    } else if (o.value !== null && typeof o.value === 'object' && !Array.isArray(o.value)) {
      const value = o.value as Record<string, unknown>;
      for (const key of Object.keys(value)) if (namesActive(key)) value[key] = asBoolean(value[key]);
    }
  }
  return body;
}

/** `active`, in any case (attribute names are case-insensitive, RFC 7643 §2.1). */
const namesActive = (path: string): boolean => path.trim().toLowerCase() === 'active';

const asBoolean = (v: unknown): unknown => (typeof v === 'string' && /^\s*(?:true|false)\s*$/i.test(v) ? v.trim().toLowerCase() === 'true' : v);
