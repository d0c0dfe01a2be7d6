import type { Registry } from 'prom-client';
import type { Logger } from '../logging.js';
import { loadInferenceConfig } from './config.js';
import { createInferenceGateway, type InferenceGateway } from './gateway.js';
import { parseKeyList } from './key-file.js';
import { NO_KEYS_WARNING, openKeyStore } from './keys.js';

export { createInferenceGateway, type InferenceGateway, type InferenceGatewayOptions } from './gateway.js';
export { loadInferenceConfig, parseInferenceConfig, type InferenceConfig } from './config.js';
export { openKeyStore, staticKeyStore, type KeyStore, type KeyStoreOptions } from './keys.js';
export { parseKeyFile, parseKeyList } from './key-file.js';
export { InferenceConfigError } from './document.js';
export { runConvertEnvoyFilter, CONVERT_USAGE, type ConvertIo } from './convert-cli.js';

export interface InferenceSetup {
  /** The inference config file (FLOWGATE_INFERENCE_CONFIG_FILE). */
  configFile: string;
  /** Comma-separated keys valid on every route, from the environment; optional. */
  envKeys?: string | undefined;
  registry: Registry;
  logger: Logger;
}

/**
 * The whole serving side from its settings: config, key store (file named in the config plus any
 * env keys) and gateway. Throws InferenceConfigError on a bad config or key file. close() stops both.
 */
export function openInference(setup: InferenceSetup): InferenceGateway {
  const config = loadInferenceConfig(setup.configFile);
  const keys = openKeyStore({
    ...(config.apiKeys.file ? { file: config.apiKeys.file } : {}),
    fixedKeys: setup.envKeys ? parseKeyList(setup.envKeys, 'inference keys from the environment') : [],
    fixedKeysSource: 'FLOWGATE_INFERENCE_API_KEYS',
    knownRoutes: new Set(config.routes.map((r) => r.name)),
    pollIntervalMs: config.apiKeys.pollIntervalSeconds * 1000,
    logger: setup.logger,
  });
  if (keys.current().length === 0) setup.logger.warn(NO_KEYS_WARNING);
  const gateway = createInferenceGateway({ config, keys, registry: setup.registry, logger: setup.logger });
  return {
    handle: gateway.handle,
    async close() {
      keys.close();
      await gateway.close();
    },
  };
}
