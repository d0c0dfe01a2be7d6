import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { convertEnvoyFilter, EnvoyFilterError, type ConvertOptions } from './envoyfilter.js';
import { routeName } from './config.js';

export interface ConvertIo {
  readFile(path: string): Promise<string>;
  readStdin(): Promise<string>;
  stdout(text: string): void;
  stderr(text: string): void;
}

export const CONVERT_USAGE = `usage: flowgate convert-envoyfilter <file|-> [options]

Reads an Istio EnvoyFilter (api-key-filter in istio-system: a Lua filter comparing x-api-key with
a plain-text api_key) and prints flowgate's inference key file. Get the input with
  kubectl get envoyfilter api-key-filter -n istio-system -o yaml

options:
  --id <id>            key id in the new file (default envoyfilter-<filter name>)
  --routes <a,b>       limit the key to these inference routes (default: every route)
  --sha256             store only the key's SHA-256, not the key
  --filter <name>      EnvoyFilter to read when the input holds several (default api-key-filter)
  --secret <name>      print a Kubernetes Secret holding the file as keys.yaml instead
  --namespace <ns>     namespace of that Secret
`;

/** Exit codes: 0 converted, 1 the input could not be converted, 2 wrong usage. */
export async function runConvertEnvoyFilter(argv: readonly string[], io: ConvertIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        id: { type: 'string' },
        routes: { type: 'string' },
        sha256: { type: 'boolean', default: false },
        filter: { type: 'string' },
        secret: { type: 'string' },
        namespace: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    io.stderr(`${(e as Error).message}\n\n${CONVERT_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(CONVERT_USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    io.stderr(`expected exactly one input file (or - for stdin)\n\n${CONVERT_USAGE}`);
    return 2;
  }
  const routes = values.routes?.split(',').map((r) => r.trim()).filter(Boolean);
  const badRoute = routes?.find((r) => !routeName.safeParse(r).success);
  if (badRoute !== undefined) {
    io.stderr(`--routes: "${badRoute}" is not a valid route name\n`);
    return 2;
  }
  if (values.namespace && !values.secret) {
    io.stderr('--namespace only applies together with --secret\n');
    return 2;
  }

  const file = positionals[0]!;
  let text: string;
  try {
    text = file === '-' ? await io.readStdin() : await io.readFile(file);
  } catch (e) {
    io.stderr(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
    return 1;
  }

  const options: ConvertOptions = {
    ...(values.id ? { id: values.id } : {}),
    ...(routes?.length ? { routes } : {}),
    ...(values.filter ? { filterName: values.filter } : {}),
    hashOnly: values.sha256,
  };
  let result;
  try {
    result = convertEnvoyFilter(text, options);
  } catch (e) {
    if (e instanceof EnvoyFilterError) {
      io.stderr(`convert-envoyfilter: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  for (const warning of result.warnings) io.stderr(`warning: ${warning}\n`);

  const keysYaml = stringify(result.keyFile);
  io.stdout(values.secret ? stringify(secretManifest(values.secret, values.namespace, keysYaml)) : keysYaml);
  return 0;
}

function secretManifest(name: string, namespace: string | undefined, keysYaml: string) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, ...(namespace ? { namespace } : {}), labels: { 'app.kubernetes.io/part-of': 'flowgate' } },
    type: 'Opaque',
    stringData: { 'keys.yaml': keysYaml },
  };
}
