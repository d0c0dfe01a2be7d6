import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api';
import { useLoad } from './components';
import { expiryProblem, inDays } from './dates';

/** `GET permissions/access-token-limits`: what a token's expiry may be (FLOWGATE_TOKEN_MAX_DAYS). */
export interface AccessTokenLimits {
  readonly default_expiration_days: number;
  readonly max_expiration_days: number;
}

/**
 * A token expiry day field that keeps to the server's limits: it starts at the server's default (once
 * known, unless changed meanwhile), offers no day past its maximum, and says why a day cannot be used.
 * `ready` is false until the limits are known: a token asked for before could be refused, after a
 * team's account, group and grants were made. A server that does not tell them leaves the check to it.
 */
export function useTokenExpiry() {
  const limits = useLoad(() => api<AccessTokenLimits>('GET', 'permissions/access-token-limits'), []);
  const [expiry, setExpiryState] = useState(inDays(90));
  const changed = useRef(false);
  const maxDays = limits.data?.max_expiration_days;
  useEffect(() => {
    if (limits.data && !changed.current) setExpiryState(inDays(limits.data.default_expiration_days));
  }, [limits.data]);
  const setExpiry = (v: string) => {
    changed.current = true;
    setExpiryState(v);
  };
  return {
    expiry,
    setExpiry,
    problem: expiryProblem(expiry, new Date(), maxDays),
    ready: !limits.loading,
    min: inDays(1),
    max: maxDays === undefined ? undefined : inDays(maxDays),
  };
}
