import { createForwarder } from '../../src/proxy/forward.js';
import { createUpstreamJson } from '../../src/upstream/json-client.js';
import { connectMlflow } from '../../src/upstream/mlflow-connection.js';

/** flowgate's JSON client over a pool of its own, with the pool's close beside it. */
export function upstreamJsonFor(upstreamUrl: string, staticPrefix = '', timeoutMs = 10_000) {
  const mlflow = connectMlflow({ upstreamUrl, staticPrefix, timeoutMs });
  return Object.assign(createUpstreamJson(mlflow), { close: () => mlflow.close(), silence: mlflow.silence });
}

/** flowgate's forwarder over a pool of its own, with the pool's close beside it. */
export function forwarderFor(upstreamUrl: string, staticPrefix = '', timeoutMs = 5_000) {
  const mlflow = connectMlflow({ upstreamUrl, staticPrefix, timeoutMs });
  return Object.assign(createForwarder(mlflow), { close: () => mlflow.close(), silence: mlflow.silence });
}
