import type { EventEmitter } from 'node:events';
export function buildGoClient(sourceDir: string, outDir: string): { binary: string; reason?: undefined } | { binary?: undefined; reason: string };
export interface GoClient extends EventEmitter {
  pid: number | undefined;
  send(message: unknown): boolean;
  kill(signal?: NodeJS.Signals): boolean;
}
export function spawnGoClient(binary: string): GoClient;
