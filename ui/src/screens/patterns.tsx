import { useState } from 'preact/hooks';
import { api, qs, seg, type PatternGrant, type PatternGrantsAnswer, type ResourceKind } from '../api';
import { actionsColumn, AskButton, AskForm, DataTable, ErrorText, optionsOf, SelectField, Tag, TextField, useConfirm, useLoad, type Column, type ConfirmRequest } from '../components';
import { change, removal } from '../changes';
import { kindLabel, KINDS, permissionsFor, type GranteeSegment } from '../kinds';
import { inWorkspaceText } from '../pin';

type ResourceType = ResourceKind;
type GranteeType = GranteeSegment;

const RESOURCE_TYPES = KINDS.map((k) => [k.kind, k.title] as const);
const ONE = (t: ResourceType) => kindLabel(t);
const GRANTEE_TYPES = [
  ['groups', 'Group'],
  ['users', 'User'],
] as const;
/** The levels a pattern grant on the kind may give (USE only on the gateway's kinds). */
const permissionOptions = (kind: ResourceType) => optionsOf(permissionsFor(kind));

const granteeOf = (g: PatternGrant): { type: GranteeType; name: string } =>
  g.username !== undefined ? { type: 'users', name: g.username } : { type: 'groups', name: g.group_name };
const granteeText = (type: GranteeType, name: string) => `${type === 'users' ? 'user' : 'group'} “${name}”`;
const patternsPath = (type: GranteeType, name: string) => `permissions/${type}/${seg(name)}/patterns`;

/** Administrators: grants on every experiment, registered model or prompt whose name matches a glob. */
export function Patterns() {
  const [shown, setShown] = useState<ResourceType>(KINDS[0]!.kind);
  const list = useLoad(() => api<PatternGrantsAnswer>('GET', `permissions/patterns${qs({ resource_type: shown })}`), [shown]);
  const confirm = useConfirm(list.reload);

  const columns: Column<PatternGrant>[] = [
    { title: 'Grantee', cell: (g) => (g.username !== undefined ? `User ${g.username}` : `Group ${g.group_name}`) },
    { title: 'Pattern', cell: (g) => <code>{g.pattern}</code> },
    { title: 'Permission', cell: (g) => <Tag p={g.permission} /> },
    actionsColumn((g) => {
      const who = granteeOf(g);
      return (
        <AskButton
          text="Remove"
          label={`Remove ${g.pattern} of ${who.name}`}
          ask={confirm.ask}
          request={removal(
            {
              title: 'Remove pattern grant',
              text: `Remove the ${g.permission} grant of ${granteeText(who.type, who.name)} on every ${ONE(g.resource_type)} matching “${g.pattern}”${inWorkspaceText(g.resource_type)}?`,
              action: 'Remove',
            },
            `${patternsPath(who.type, who.name)}${qs({ resource_type: g.resource_type, pattern: g.pattern })}`,
          )}
        />
      );
    }),
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
        <PatternForm ask={confirm.ask} onAdded={setShown} />
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
      {confirm.dialog}
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
  /** A level the new kind does not take (USE, leaving a gateway kind) goes back to READ. */
  const chooseKind = (next: ResourceType) => {
    setKind(next);
    if (!(permissionsFor(next) as readonly string[]).includes(permission)) setPermission('READ');
  };
  const request = (): ConfirmRequest | undefined => {
    const name = who.trim();
    if (!name || !pattern) return undefined;
    const asking = { title: 'Add pattern grant', text: `Give ${granteeText(type, name)} ${permission} on every ${ONE(kind)} whose name matches “${pattern}”${inWorkspaceText(kind)}?`, action: 'Grant' };
    return change(asking, 'POST', patternsPath(type, name), { resource_type: kind, pattern, permission }, () => {
      setPattern('');
      onAdded(kind);
    });
  };
  return (
    <AskForm submit="Add pattern grant" request={request} ask={ask}>
      <SelectField label="Grant to" id="fg-pattern-grantee-type" value={type} options={GRANTEE_TYPES} onChange={(v) => setType(v as GranteeType)} />
      <TextField label="Name" id="fg-pattern-grantee" value={who} onChange={setWho} />
      <SelectField label="Kind" id="fg-pattern-kind" value={kind} options={RESOURCE_TYPES} onChange={(v) => chooseKind(v as ResourceType)} />
      <TextField label="Pattern" id="fg-pattern" value={pattern} placeholder="team-a/*" onChange={setPattern} />
      <SelectField label="Permission" id="fg-pattern-permission" value={permission} options={permissionOptions(kind)} onChange={setPermission} />
    </AskForm>
  );
}
