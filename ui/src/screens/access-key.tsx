import { useState } from 'preact/hooks';
import { api, trackingUri, type IssuedToken } from '../api';
import { AskButton, Secret, useConfirm } from '../components';
import { dateTime } from '../dates';

export type { IssuedToken } from '../api';

export const exportsFor = (t: IssuedToken) =>
  `export MLFLOW_TRACKING_URI=${trackingUri()}\nexport MLFLOW_TRACKING_USERNAME=${t.username}\nexport MLFLOW_TRACKING_PASSWORD=${t.token}`;

/** A token shown once: the value, its expiry, and the environment the MLflow client reads. */
export function IssuedTokenView({ issued }: { issued: IssuedToken }) {
  return (
    <div class="fg-secret" role="status">
      <p>
        Access key for <strong>{issued.username}</strong>, valid until <strong>{dateTime(issued.expiration)}</strong>. It is shown{' '}
        <strong>only once</strong>: copy it now.
      </p>
      <Secret label="Access key" value={issued.token} id="fg-token" />
      <Secret label="For the MLflow client" value={exportsFor(issued)} id="fg-exports" />
    </div>
  );
}

/** Everyone's own access key, whatever the sign-in: for the MLflow client and scripts. */
export function AccessKey({ username }: { username: string }) {
  const [issued, setIssued] = useState<IssuedToken>();
  const confirm = useConfirm();
  return (
    <section>
      <h1>My access key</h1>
      <div class="fg-panel">
        <p>
          An access key lets the MLflow client and your scripts act as <strong>{username}</strong> (HTTP Basic: your user name and the
          key). Creating a new key makes your previous key stop working.
        </p>
        <AskButton
          text="Create access key"
          primary
          ask={confirm.ask}
          request={{
            title: 'Create access key',
            text: 'Create a new access key? Your previous key, if any, stops working at once.',
            action: 'Create access key',
            run: async () => setIssued(await api<IssuedToken>('PATCH', 'permissions/users/access-token', {})),
          }}
        />
        {issued && <IssuedTokenView issued={issued} />}
      </div>
      {confirm.dialog}
    </section>
  );
}
