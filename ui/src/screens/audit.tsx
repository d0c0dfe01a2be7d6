import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorText, Pager, SearchBox, useLoad, usePages } from '../components';

interface Entry {
  id: number;
  at: string;
  actor: string;
  action: string;
  target: string;
  old_value: unknown;
  new_value: unknown;
}

const ACTIONS = ['', 'grant.', 'user.', 'group.', 'token.', 'session.'];
const show = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

export function Audit() {
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [target, setTarget] = useState('');
  const pages = usePages();
  const log = useLoad(
    () =>
      api<{ entries: Entry[]; next_page_token?: string }>('GET', `permissions/ui/audit${qs({ actor, action, target, page_token: pages.token })}`),
    [actor, action, target, pages.token],
  );
  return (
    <section>
      <h1>Audit log</h1>
      <div class="fg-toolbar">
        <SearchBox label="Actor (exact)" value={actor} onChange={(v) => (setActor(v), pages.reset())} />
        <label class="fg-field">
          <span>Action</span>
          <select value={action} onChange={(e) => (setAction((e.target as HTMLSelectElement).value), pages.reset())}>
            {ACTIONS.map((a) => (
              <option value={a}>{a ? `${a}*` : 'Any'}</option>
            ))}
          </select>
        </label>
        <SearchBox label="Target contains" value={target} onChange={(v) => (setTarget(v), pages.reset())} />
      </div>
      <ErrorText error={log.error} />
      <table class="fg-table">
        <thead>
          <tr>
            <th scope="col">When (UTC)</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {(log.data?.entries ?? []).map((e) => (
            <tr key={e.id}>
              <td>{e.at.replace('T', ' ').slice(0, 19)}</td>
              <td>{e.actor}</td>
              <td>{e.action}</td>
              <td>{e.target}</td>
              <td>{show(e.old_value)}</td>
              <td>{show(e.new_value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} next={log.data?.next_page_token} />
    </section>
  );
}
