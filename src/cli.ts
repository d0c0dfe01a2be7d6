#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { startFlowgate } from './main.js';
import { VERSION } from './version.js';

const HELP = `flowgate ${VERSION} — authorization sidecar for MLflow

Usage:
  flowgate serve                          start the proxy (configured by FLOWGATE_* variables)
  flowgate convert-envoyfilter <file>     print inference key config from an Istio EnvoyFilter
  flowgate --version                      print the version
  flowgate --help                         this text

Configuration: environment variables FLOWGATE_*, optionally a JSON file named by
FLOWGATE_CONFIG_FILE. See README.md for the full table.
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
  if (values.help || command === undefined || command === 'help') {
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
  process.stderr.write(`flowgate: unknown command '${command}'\n\n${HELP}`);
  return 2;
}

async function serve(): Promise<number> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`flowgate: ${e.message}\n`);
      return 78;
    }
    throw e;
  }
  const flowgate = await startFlowgate(config);
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
