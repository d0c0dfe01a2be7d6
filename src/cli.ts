#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { startFlowgate } from './main.js';
import { VERSION } from './version.js';

const HELP = `flowgate ${VERSION} — authorization sidecar for MLflow

Usage:
  flowgate serve                          start the proxy (configured by FLOWGATE_* variables)
  flowgate convert-envoyfilter <file>     print inference key config from an Istio EnvoyFilter
  flowgate grants prune [--dry-run]       remove grants of resources MLflow no longer has (after mlflow gc), by the running flowgate
  flowgate grants prune --store [--dry-run]   the same on the store FLOWGATE_* configures, with no flowgate running
  flowgate routes --check [--url URL]     whether this flowgate classifies every route of the running MLflow's release
  flowgate routes --check-newest          whether the newest MLflow release on PyPI is recorded
  flowgate users|groups|grants|tokens|audit VERB …
                                          the admin API of a running flowgate (\`flowgate users --help\`)
  flowgate explain METHOD PATH [--user NAME] [--body JSON]
                                          the decision on that request and why (every grant and check)
  flowgate team-setup --team T --experiment E --service-account SA --expires DATE …
                                          the spec's team setup, steps 1–4, printing the YAML of steps 5–6
  flowgate team-setup --team T --experiment E --kubernetes-service-account NS:NAME --audience AUD …
                                          the same with no token nor Secret: pods use their projected service-account token
  flowgate policy export | apply FILE [--dry-run] [--prune]
                                          users, groups, grants as a YAML file (never tokens)
  flowgate store copy --from sqlite:PATH [--to postgres://…]
                                          move a store into a new PostgreSQL database (the configured one by default), verified by counts
  flowgate import mlflow-basic-auth|mlflow-oidc-auth --from DATABASE_URI [--dry-run] [--merge-existing] [--force]
                                          users, passwords, roles, groups and grants of MLflow's basic-auth or mlflow-oidc-auth, into the configured store
  flowgate --version                      print the version
  flowgate --help                         this text

Configuration: environment variables FLOWGATE_*, optionally a JSON file named by
FLOWGATE_CONFIG_FILE. Every setting: docs/configuration.md.
`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    strict: false,
  });
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = positionals[0];
  // `flowgate users --help`: the subcommand's own help; `flowgate --help`: this one.
  const subcommandHelp = values.help && command !== undefined && ['users', 'groups', 'grants', 'tokens', 'audit', 'explain', 'team-setup', 'policy', 'store', 'routes', 'import'].includes(command);
  if (!subcommandHelp && (values.help || command === undefined || command === 'help')) {
    process.stdout.write(HELP);
    return command === undefined && !values.help ? 2 : 0;
  }
  if (command === 'serve') return serve();
  if (command === 'convert-envoyfilter') {
    const { runConvertEnvoyFilter } = await import('./inference/convert-cli.js');
    return runConvertEnvoyFilter(argv.slice(argv.indexOf('convert-envoyfilter') + 1), {
      readFile: (path) => readFile(path, 'utf8'),
      readStdin: () => text(process.stdin),
      stdout: (t) => process.stdout.write(t),
      stderr: (t) => process.stderr.write(t),
    });
  }
  // `grants prune` asks the running flowgate (the admin API), like the other verbs; `--store` works on
  // the store FLOWGATE_* configures directly, for when no flowgate runs.
  if (command === 'grants' && positionals[1] === 'prune' && argv.includes('--store')) {
    const config = configFrom(process.env);
    if (config === undefined) return 78;
    const { runGrantsPrune } = await import('./commands/grants-prune.js');
    const args = argv.slice(argv.indexOf('prune') + 1).filter((a) => a !== '--store');
    return runGrantsPrune(args, config, (t) => process.stdout.write(t), (t) => process.stderr.write(t));
  }
  const adminIo = {
    env: process.env,
    out: (t: string) => void process.stdout.write(t),
    err: (t: string) => void process.stderr.write(t),
    readFile: (path: string) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
  };
  if (['users', 'groups', 'grants', 'tokens', 'audit'].includes(command)) {
    const { runAdminCli } = await import('./commands/admin-cli/run.js');
    return runAdminCli(command, argv.slice(argv.indexOf(command) + 1), adminIo);
  }
  if (command === 'explain') {
    const [{ runAction }, { EXPLAIN }] = await Promise.all([import('./commands/admin-cli/run.js'), import('./commands/admin-cli/explain.js')]);
    return runAction(EXPLAIN, argv.slice(argv.indexOf(command) + 1), adminIo);
  }
  if (command === 'team-setup') {
    const { runTeamSetup } = await import('./commands/team-setup.js');
    return runTeamSetup(argv.slice(argv.indexOf(command) + 1), adminIo);
  }
  if (command === 'policy') {
    const { runPolicy } = await import('./commands/policy.js');
    return runPolicy(argv.slice(argv.indexOf(command) + 1), adminIo);
  }
  if (command === 'store') {
    const { runStoreCopy } = await import('./commands/store-copy.js');
    if (positionals[1] !== 'copy') return runStoreCopy(['--help'], (t) => process.stderr.write(t), (t) => process.stderr.write(t), loadConfig({}).postgres).then(() => 2);
    // A postgres:// side is reached as `serve` reaches FLOWGATE_DATABASE_URL: FLOWGATE_DATABASE_CA_FILE
    // (verified TLS) and the FLOWGATE_DATABASE_* timeouts, from the validated configuration.
    const config = values.help ? loadConfig({}) : configFrom(process.env);
    if (config === undefined) return 78;
    return runStoreCopy(argv.slice(argv.indexOf('copy') + 1), (t) => process.stdout.write(t), (t) => process.stderr.write(t), config.postgres, config.databaseUrl);
  }
  if (command === 'import') {
    const args = argv.slice(argv.indexOf('import') + 1);
    const { runImport } = await import('./commands/import.js');
    const io = { out: (t: string) => void process.stdout.write(t), err: (t: string) => void process.stderr.write(t) };
    if (values.help) return runImport(['--help'], loadConfig({}), io);
    const config = configFrom(process.env);
    if (config === undefined) return 78;
    return runImport(args, config, io);
  }
  if (command === 'routes') {
    const { runRoutesCheck } = await import('./commands/routes-check.js');
    return runRoutesCheck(argv.slice(argv.indexOf('routes') + 1), {
      env: process.env,
      out: (t) => process.stdout.write(t),
      err: (t) => process.stderr.write(t),
    });
  }
  process.stderr.write(`flowgate: unknown command '${command}'\n\n${HELP}`);
  return 2;
}

/** The validated config, or undefined after saying what is wrong (exit 78, EX_CONFIG). */
function configFrom(env: NodeJS.ProcessEnv): Config | undefined {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`flowgate: ${e.message}\n`);
      return undefined;
    }
    throw e;
  }
}

async function serve(): Promise<number> {
  const config = configFrom(process.env);
  if (config === undefined) return 78;
  let flowgate: Awaited<ReturnType<typeof startFlowgate>>;
  try {
    flowgate = await startFlowgate(config);
  } catch (e) {
    // Settings only found wrong at start (a decision log file that cannot be opened, an invalid inference
    // file) are configuration problems too. By name: the inference module is loaded only when configured.
    if (e instanceof ConfigError || (e instanceof Error && e.name === 'InferenceConfigError')) {
      process.stderr.write(`flowgate: ${e.message}\n`);
      return 78;
    }
    throw e;
  }
  const stop = () => {
    void flowgate.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return new Promise<number>(() => undefined);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`flowgate: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
