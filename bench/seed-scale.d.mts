import type { Database } from 'better-sqlite3';
export function seedScale(db: Database): void;
