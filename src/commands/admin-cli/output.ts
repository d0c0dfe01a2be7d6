export interface Io {
  readonly env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  readFile(path: string): Promise<string>;
}

/** Rows as aligned columns, or the API's JSON as is with `--json`. */
export function printRows(io: Io, json: boolean, raw: unknown, rows: Record<string, unknown>[], columns: readonly string[]): void {
  if (json) {
    io.out(`${JSON.stringify(raw, null, 2)}\n`);
    return;
  }
  const cell = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const table = [columns.map((c) => c.toUpperCase()), ...rows.map((r) => columns.map((c) => cell(r[c])))];
  const widths = columns.map((_, i) => Math.max(...table.map((line) => line[i]!.length)));
  for (const line of table) io.out(`${line.map((v, i) => (i === line.length - 1 ? v : v.padEnd(widths[i]!))).join('  ')}\n`);
}

/** A one-line confirmation, or the API's JSON with `--json`. */
export function printDone(io: Io, json: boolean, raw: unknown, message: string): void {
  io.out(json ? `${JSON.stringify(raw, null, 2)}\n` : `${message}\n`);
}
