import { stringify } from 'yaml';
import { UsageError } from './admin-cli/connection.js';

/**
 * The secret-free team setup (`flowgate team-setup --kubernetes-service-account NS:NAME`): the team's
 * pods prove who they are with a projected service-account token for flowgate's audience, which
 * flowgate verifies against the cluster's keys (a `kind: kubernetes` bearer issuer,
 * docs/machine-identity.md). Nothing is minted and nothing secret is printed.
 */

/** Where MLflow's `kubernetes` request-auth provider reads the pod's token and namespace (mlflow.tracking.request_auth). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The MLFLOW_TRACKING_AUTH values of MLflow's two Kubernetes providers: the second also sends the namespace as X-MLFLOW-WORKSPACE. */
export const TRACKING_AUTHS = ['kubernetes', 'kubernetes-namespaced'] as const;
export type TrackingAuth = (typeof TRACKING_AUTHS)[number];
/** The kubelet refreshes a projected token well before this; Kubernetes' minimum is 600. */
const TOKEN_SECONDS = 3600;

/** The defaults of a `kind: kubernetes` issuer (src/bearer/config.ts): the user and group a service account becomes. */
export const kubernetesUsername = (namespace: string, name: string) => `k8s.${namespace}.${name}`;
export const namespaceGroup = (namespace: string) => `k8s:${namespace}`;

export interface KubernetesServiceAccount {
  readonly namespace: string;
  readonly name: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** `NAMESPACE:NAME`, each as Kubernetes spells them (a namespace is a DNS label, a service account a DNS subdomain). */
export function parseServiceAccount(value: string): KubernetesServiceAccount {
  const parts = value.split(':');
  const [namespace, name] = parts;
  if (parts.length !== 2 || !namespace || !name) throw new UsageError(`--kubernetes-service-account: expected NAMESPACE:NAME, got '${value}'`);
  if (!DNS_LABEL.test(namespace)) throw new UsageError(`--kubernetes-service-account: '${namespace}' is not a Kubernetes namespace name (lower-case letters, digits and '-', at most 63)`);
  if (!DNS_SUBDOMAIN.test(name)) throw new UsageError(`--kubernetes-service-account: '${name}' is not a Kubernetes service account name (lower-case letters, digits, '-' and '.')`);
  return { namespace, name };
}

export function trackingAuthNamed(value: string | undefined): TrackingAuth {
  const auth = value ?? 'kubernetes';
  if (!(TRACKING_AUTHS as readonly string[]).includes(auth)) throw new UsageError(`--tracking-auth: expected ${TRACKING_AUTHS.join(' or ')}, got '${auth}'`);
  return auth as TrackingAuth;
}

export interface ProjectedTokenManifest {
  readonly account: KubernetesServiceAccount;
  /** The PodDefault's name and the label that selects pods. */
  readonly name: string;
  readonly label: string;
  readonly trackingUri: string;
  readonly trackingAuth: TrackingAuth;
  /** flowgate's audience: the `audience` of its kubernetes issuer. */
  readonly audience: string;
}

/**
 * A ServiceAccount that gets no API-server token by itself, and a Kubeflow PodDefault that runs the
 * team's pods as it with a token for flowgate's audience where MLflow's provider reads the pod's
 * token. MLflow reads only that one path, so the API server's own token must not be mounted there:
 * the ServiceAccount says so before any pod is admitted (the PodDefault's webhook runs after
 * Kubernetes has mounted the default token of the pod's service account).
 */
export function projectedTokenYaml(m: ProjectedTokenManifest): string {
  const { namespace, name: serviceAccount } = m.account;
  const volume = `${m.name}-token`;
  const account = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: serviceAccount, namespace },
    automountServiceAccountToken: false,
  };
  const podDefault = {
    apiVersion: 'kubeflow.org/v1alpha1',
    kind: 'PodDefault',
    metadata: { name: m.name, namespace },
    spec: {
      desc: `MLflow access as system:serviceaccount:${namespace}:${serviceAccount} (projected token, no Secret)`,
      selector: { matchLabels: { [m.label]: 'true' } },
      serviceAccountName: serviceAccount,
      automountServiceAccountToken: false,
      env: [
        { name: 'MLFLOW_TRACKING_URI', value: m.trackingUri },
        { name: 'MLFLOW_TRACKING_AUTH', value: m.trackingAuth },
      ],
      volumes: [
        {
          name: volume,
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', audience: m.audience, expirationSeconds: TOKEN_SECONDS } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ],
      volumeMounts: [{ name: volume, mountPath: SERVICE_ACCOUNT_DIR, readOnly: true }],
    },
  };
  return `${stringify(account)}---\n${stringify(podDefault)}`;
}
