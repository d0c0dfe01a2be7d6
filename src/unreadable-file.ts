/**
 * Why a file could not be read, in words an operator acts on: the path and the cause in one
 * phrase. The file's content is never part of it (it may be a secret).
 */
export function unreadableFile(path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return `${path} does not exist`;
    case 'EACCES':
    case 'EPERM':
      return `${path} cannot be read (permission denied)`;
    case 'EISDIR':
      return `${path} is a directory, not a file`;
    case 'ENOTDIR':
      return `${path} does not exist (a part of the path is not a directory)`;
    default:
      return `${path} cannot be read (${code ?? 'read failed'})`;
  }
}
