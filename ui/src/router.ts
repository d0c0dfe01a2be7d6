import { useEffect, useState } from 'preact/hooks';
import { FIRST_ROUTE } from './kind-list';

/** Hash routes (`#/experiments/12`): the server answers one page, the screens live after the `#`. */
export function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, '') || FIRST_ROUTE).split('/').map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return parts;
}

export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join('/')}`;
