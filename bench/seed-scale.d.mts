import type { Sql } from '../src/store/sql.js';
export function seedScale(sql: Sql): Promise<void>;
