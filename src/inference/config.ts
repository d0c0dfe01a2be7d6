import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InferenceConfigError, parseDocumentText, validateDocument } from './document.js';

/** Route names become metric labels and key scopes, so they are short identifiers. */
export const routeName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$/, 'expected a lowercase name such as "iris" or "fraud-v2" (max 63 chars)');

const pathPrefix = z
  .string()
  .transform((v) => v.replace(/\/+$/, ''))
  .refine((v) => /^(\/[A-Za-z0-9._~-]+)+$/.test(v) && !/\/\.\.?(\/|$)/.test(v), {
    message: 'expected a path such as /models/iris (no "/" alone, no "." or ".." segments, no encoded characters)',
  });

const hostName = z
  .string()
  .transform((v) => v.toLowerCase().replace(/\.$/, ''))
  .refine((v) => /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(v), {
    message: 'expected a DNS host name without port, such as iris.models.example.com',
  });

const upstream = z.string().transform((v, ctx) => {
  const fail = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return fail('expected an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail('expected an http or https URL');
  if (url.search || url.hash) return fail('must not carry a query or fragment');
  if (url.username || url.password) return fail('must not carry credentials');
  return url;
});

const routeSchema = z
  .object({
    name: routeName,
    upstream,
    pathPrefix: pathPrefix.optional(),
    hosts: z.array(hostName).min(1).optional(),
    stripPrefix: z.boolean().default(false),
    /** The model a key scope is checked against when the path names none (MLflow's `/invocations`). */
    model: z.string().min(1).optional(),
    /** Model-server health and readiness paths answer without a key only when this is true. */
    publicHealth: z.boolean().default(false),
    /** Send the client's Host on; by default the upstream's own host name is sent (Knative routes on it). */
    preserveHost: z.boolean().default(false),
  })
  .strict()
  .refine((r) => r.pathPrefix !== undefined || r.hosts !== undefined, {
    message: 'a route needs a pathPrefix, hosts, or both',
  })
  .refine((r) => !r.stripPrefix || r.pathPrefix !== undefined, {
    message: 'stripPrefix needs a pathPrefix',
    path: ['stripPrefix'],
  })
  // A gateway behind the route that routes on Host (Knative, Istio) would send the request to
  // whichever model the client's Host names, while flowgate checked the key against the path only.
  .refine((r) => !r.preserveHost || r.hosts !== undefined, {
    error: (issue) => {
      const name = (issue.input as { name?: unknown }).name;
      return `route ${typeof name === 'string' ? `"${name}" ` : ''}sets preserveHost without hosts: list the Host names it serves in hosts, so flowgate checks the Host the model server's gateway routes on`;
    },
    path: ['preserveHost'],
  });

const inferenceConfigSchema = z
  .object({
    routes: z.array(routeSchema).min(1, 'at least one route is required'),
    apiKeys: z
      .object({
        /** A YAML/JSON key file, normally a mounted Kubernetes Secret. */
        file: z.string().min(1).optional(),
        /** The periodic stat that backs up fs.watch (Kubernetes swaps secret symlinks). */
        pollIntervalSeconds: z.number().min(0.05).max(3600).default(10),
      })
      .strict()
      .default({ pollIntervalSeconds: 10 }),
    /** Idle time allowed between bytes from the model server before answering 504. */
    upstreamTimeoutSeconds: z.number().positive().max(86_400).default(300),
    maxSocketsPerUpstream: z.number().int().positive().max(10_000).default(256),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seenNames = new Set<string>();
    const seenMatch = new Set<string>();
    c.routes.forEach((r, i) => {
      if (seenNames.has(r.name)) ctx.addIssue({ code: 'custom', path: ['routes', i, 'name'], message: `duplicate route name "${r.name}"` });
      seenNames.add(r.name);
      for (const host of r.hosts ?? ['*']) {
        const match = `${host} ${r.pathPrefix ?? '/'}`;
        if (seenMatch.has(match))
          ctx.addIssue({ code: 'custom', path: ['routes', i], message: `another route already matches host ${host} and path ${r.pathPrefix ?? '/'}` });
        seenMatch.add(match);
      }
    });
  });

export type InferenceConfig = z.output<typeof inferenceConfigSchema>;
export type InferenceRouteConfig = InferenceConfig['routes'][number];

export function parseInferenceConfig(text: string, source = 'inference config'): InferenceConfig {
  return validateDocument(inferenceConfigSchema, parseDocumentText(text, source), source);
}

/** Reads the file named by FLOWGATE_INFERENCE_CONFIG_FILE (JSON or YAML); throws InferenceConfigError. */
export function loadInferenceConfig(path: string): InferenceConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InferenceConfigError(path, [`cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return parseInferenceConfig(text, path);
}
