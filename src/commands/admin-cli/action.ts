import type { ParseArgsConfig } from 'node:util';
import type { AdminClient } from './client.js';
import type { Io } from './output.js';

export interface ActionContext {
  readonly client: AdminClient;
  readonly io: Io;
  readonly json: boolean;
  readonly values: Record<string, string | boolean | string[] | undefined>;
  readonly args: readonly string[];
}

/** One `flowgate <noun> <verb>`: its options, its positional arguments, and what it does. */
export interface Action {
  readonly usage: string;
  readonly options?: NonNullable<ParseArgsConfig['options']>;
  /** Names of the positional arguments, all required. */
  readonly args?: readonly string[];
  run(ctx: ActionContext): Promise<void>;
}

export type Noun = Readonly<Record<string, Action>>;
