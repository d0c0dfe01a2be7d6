import { useState } from 'preact/hooks';
import { api, qs, seg } from '../api';
import { kindLabel, KINDS, type Kind } from '../kind-list';
import { ConfirmDialog, DataTable, ErrorText, PERMISSIONS, SelectField, Tag, TextField, ToolbarForm, useLoad, type Column, type ConfirmRequest } from '../components';

/** The admin API's pattern grant (src/admin/pattern-grants.ts): one of username or group_name. */
interface PatternGrant {
  resource_type: ResourceType;
  pattern: string;
  username?: string;
  group_name?: string;
  permission: string;
}

type ResourceType = Kind['kind'];
type GranteeType = 'users' | 'groups';

const RESOURCE_TYPES = KINDS.map((k) => [k.kind, k.title] as const);
const ONE = (t: ResourceType) => kindLabel(t);
const GRANTEE_TYPES = [
  ['groups', 'Group'],
  ['users', 'User'],
] as const;
const PERMISSION_OPTIONS = PERMISSIONS.map((p) => [p, p] as const);

const granteeOf = (g: PatternGrant): { type: GranteeType; name: string } =>
  g.username !== undefined ? { type: 'users', name: g.username } : { type: 'groups', name: g.group_name ?? '' };
const granteeText = (type: GranteeType, name: string) => `${type === 'users' ? 'user' : 'group'} “${name}”`;
const patternsPath = (type: GranteeType, name: string) => `permissions/${type}/${seg(name)}/patterns`;

/** Administrators: grants on every experiment, registered model or prompt whose name matches a glob. */
export function Patterns() {
  const [shown, setShown] = useState<ResourceType>(KINDS[0]!.kind);
  const list = useLoad(() => api<{ patterns: PatternGrant[] }>('GET', `permissions/patterns${qs({ resource_type: shown })}`), [shown]);
  const [confirm, setConfirm] = useState<ConfirmRequest>();

  const columns: Column<PatternGrant>[] = [
    { title: 'Grantee', cell: (g) => (g.username !== undefined ? `User ${g.username}` : `Group ${g.group_name}`) },
    { title: 'Pattern', cell: (g) => <code>{g.pattern}</code> },
    { title: 'Permission', cell: (g) => <Tag p={g.permission} /> },
    {
      title: 'Actions',
      hiddenTitle: true,
      cell: (g) => {
        const who = granteeOf(g);
        return (
          <div class="fg-actions">
            <button
              class="fg-button fg-danger"
              type="button"
              aria-label={`Remove ${g.pattern} of ${who.name}`}
              onClick={() =>
                setConfirm({
                  title: 'Remove pattern grant',
                  text: `Remove the ${g.permission} grant of ${granteeText(who.type, who.name)} on every ${ONE(g.resource_type)} matching “${g.pattern}”?`,
                  action: 'Remove',
                  danger: true,
                  run: () => api('DELETE', `${patternsPath(who.type, who.name)}${qs({ resource_type: g.resource_type, pattern: g.pattern })}`),
                })
              }
            >
              Remove
            </button>
          </div>
        );
      },
    },
  ];

  return (
    <section>
      <h1>Pattern grants</h1>
      <p class="fg-muted">
        A grant on every resource of a kind whose name matches a pattern, including those created or renamed later: <code>*</code> any run of
        characters, <code>?</code> one character, <code>\</code> makes the next one literal. A grant on the resource itself still decides first.
      </p>
      <div class="fg-panel">
        <h2>Add a pattern grant</h2>
        <PatternForm ask={setConfirm} onAdded={setShown} />
      </div>
      <div class="fg-toolbar">
        <SelectField label="Show" id="fg-patterns-kind" value={shown} options={RESOURCE_TYPES} onChange={(v) => setShown(v as ResourceType)} />
      </div>
      <ErrorText error={list.error} />
      <DataTable
        label="Pattern grants"
        columns={columns}
        rows={list.data?.patterns ?? []}
        rowKey={(g) => `${g.username === undefined ? 'g' : 'u'}:${g.username ?? g.group_name}:${g.pattern}`}
        empty={list.loading ? undefined : `No pattern grants on ${ONE(shown)}s.`}
      />
      <ConfirmDialog request={confirm} onDone={(changed) => (setConfirm(undefined), changed && list.reload())} />
    </section>
  );
}

/** Asks to add one; `onAdded` hears its kind, so the list can show it. */
function PatternForm({ ask, onAdded }: { ask: (r: ConfirmRequest) => void; onAdded: (kind: ResourceType) => void }) {
  const [type, setType] = useState<GranteeType>('groups');
  const [who, setWho] = useState('');
  const [kind, setKind] = useState<ResourceType>(KINDS[0]!.kind);
  const [pattern, setPattern] = useState('');
  const [permission, setPermission] = useState('READ');
  return (
    <ToolbarForm
      onSubmit={() => {
        const name = who.trim();
        if (!name || !pattern) return;
        ask({
          title: 'Add pattern grant',
          text: `Give ${granteeText(type, name)} ${permission} on every ${ONE(kind)} whose name matches “${pattern}”?`,
          action: 'Grant',
          run: async () => {
            await api('POST', patternsPath(type, name), { resource_type: kind, pattern, permission });
            setPattern('');
            onAdded(kind);
          },
        });
      }}
    >
      <SelectField label="Grant to" id="fg-pattern-grantee-type" value={type} options={GRANTEE_TYPES} onChange={(v) => setType(v as GranteeType)} />
      <TextField label="Name" id="fg-pattern-grantee" value={who} onChange={setWho} />
      <SelectField label="Kind" id="fg-pattern-kind" value={kind} options={RESOURCE_TYPES} onChange={(v) => setKind(v as ResourceType)} />
      <TextField label="Pattern" id="fg-pattern" value={pattern} placeholder="team-a/*" onChange={setPattern} />
      <SelectField label="Permission" id="fg-pattern-permission" value={permission} options={PERMISSION_OPTIONS} onChange={setPermission} />
      <button class="fg-button fg-primary" type="submit">
        Add pattern grant
      </button>
    </ToolbarForm>
  );
}
