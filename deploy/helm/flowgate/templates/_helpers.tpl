{{/* Names: the release's flowgate, and its MLflow beside it. Both end up in every object's name. */}}
{{- define "flowgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Always holds "flowgate" unless overridden: the alert rules match the PodMonitor's job by it. */}}
{{- define "flowgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "flowgate.mlflowName" -}}
{{- printf "%s-mlflow" (include "flowgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "flowgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "flowgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component's pods: "flowgate" (ingress mode) or "mlflow". */}}
{{- define "flowgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flowgate.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The component whose pods run flowgate: MLflow's pod in sidecar mode, flowgate's own otherwise. */}}
{{- define "flowgate.proxyComponent" -}}
{{- if eq .Values.mode "sidecar" -}}mlflow{{- else -}}flowgate{{- end -}}
{{- end -}}

{{- define "flowgate.proxySelectorLabels" -}}
{{- include "flowgate.selectorLabels" (dict "root" . "component" (include "flowgate.proxyComponent" .)) -}}
{{- end -}}

{{/* How flowgate reaches MLflow: loopback in the shared pod, or MLflow's Service by its full name. */}}
{{- define "flowgate.upstreamHost" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- printf "127.0.0.1:%v" .Values.mlflow.port -}}
{{- else -}}
{{- printf "%s.%s.svc:%v" (include "flowgate.mlflowName" .) .Release.Namespace .Values.mlflow.port -}}
{{- end -}}
{{- end -}}

{{- define "flowgate.sqliteClaim" -}}
{{- default (printf "%s-policy" (include "flowgate.fullname" .)) .Values.store.sqlite.existingClaim -}}
{{- end -}}

{{/*
What values.schema.json cannot say because it spans fields; each message names the value to change,
as flowgate's own configuration errors would at start (src/config.ts), but before anything is applied.
*/}}
{{- define "flowgate.validate" -}}
{{- $v := .Values -}}
{{- if and (eq $v.store.type "sqlite") (ne (int $v.replicas) 1) -}}
{{- fail "replicas: the SQLite store has one writer, so replicas must be 1; use store.type=postgres for more" -}}
{{- end -}}
{{- if eq (int $v.config.port) (int $v.config.metricsPort) -}}
{{- fail "config.metricsPort: must differ from config.port (metrics never share the public listener)" -}}
{{- end -}}
{{- /* Also under --skip-schema-validation: a metrics rule with no peer admits every pod. */ -}}
{{- if and $v.networkPolicy.enabled (not $v.networkPolicy.metricsFrom) -}}
{{- fail "networkPolicy.metricsFrom: name at least one peer (Prometheus); empty would open the metrics port to every pod" -}}
{{- end -}}
{{- if and (not $v.config.enforce) (not $v.admin.enabled) -}}
{{- fail "config.enforce: false (shadow mode) requires the bootstrap admin (admin.enabled)" -}}
{{- end -}}
{{- range $v.extraEnv -}}
{{- if and (eq .name "FLOWGATE_INFERENCE_API_KEYS") (not $v.inference.enabled) -}}
{{- fail "extraEnv: FLOWGATE_INFERENCE_API_KEYS opens inference routes, which need inference.enabled (flowgate refuses the keys without them)" -}}
{{- end -}}
{{- end -}}
{{- if $v.oidc.enabled -}}
{{- $callback := printf "%s/flowgate/callback" $v.config.basePath -}}
{{- $redirect := urlParse $v.oidc.redirectUrl -}}
{{- if ne $redirect.path $callback -}}
{{- fail (printf "oidc.redirectUrl: its path must be %s (flowgate's callback under config.basePath)" $callback) -}}
{{- end -}}
{{- if and (eq $redirect.scheme "http") $v.config.session.cookieSecure -}}
{{- fail "oidc.redirectUrl: is plain http, so Secure cookies would never be sent back; use https or set config.session.cookieSecure=false (development only)" -}}
{{- end -}}
{{- $issuer := urlParse $v.oidc.issuerUrl -}}
{{- if and (eq $issuer.scheme "http") (not (has (regexReplaceAll ":[0-9]+$" $issuer.host "") (list "127.0.0.1" "localhost" "[::1]"))) -}}
{{- fail "oidc.issuerUrl: must be https (plain http only for a provider on loopback)" -}}
{{- end -}}
{{- end -}}
{{- range $i, $issuer := $v.bearer.issuers -}}
{{- with $issuer.jwks_file -}}
{{- $mounted := and $v.bearer.jwksConfigMap.name (hasPrefix "/etc/flowgate/bearer-keys/" .) -}}
{{- range $v.extraVolumeMounts -}}
{{- if hasPrefix (printf "%s/" (trimSuffix "/" .mountPath)) $issuer.jwks_file -}}{{- $mounted = true -}}{{- end -}}
{{- end -}}
{{- if not $mounted -}}
{{- fail (printf "bearer.issuers[%d].jwks_file: %s is in no mounted volume; set bearer.jwksConfigMap.name and name a key under /etc/flowgate/bearer-keys/" $i .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A Secret key as an environment variable (MLflow's settings; flowgate's own secrets are mounted files). */}}
{{- define "flowgate.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret.name }}
      key: {{ .secret.key }}
{{- end -}}

{{- define "flowgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The flowgate container, the same in both modes. */}}
{{- define "flowgate.container" -}}
{{- $v := .Values -}}
- name: flowgate
  image: {{ include "flowgate.image" . }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args: [serve]
  ports:
    - name: http
      containerPort: {{ $v.config.port }}
    - name: metrics
      containerPort: {{ $v.config.metricsPort }}
  env:
    - name: FLOWGATE_PORT
      value: {{ $v.config.port | int64 | quote }}
    - name: FLOWGATE_METRICS_PORT
      value: {{ $v.config.metricsPort | int64 | quote }}
    - name: FLOWGATE_UPSTREAM_URL
      value: {{ printf "http://%s" (include "flowgate.upstreamHost" .) | quote }}
    - name: FLOWGATE_UPSTREAM_STATIC_PREFIX
      value: {{ $v.mlflow.staticPrefix | quote }}
    - name: FLOWGATE_UPSTREAM_TIMEOUT_MS
      value: {{ $v.config.upstreamTimeoutMs | int64 | quote }}
    - name: FLOWGATE_BASE_PATH
      value: {{ $v.config.basePath | quote }}
    {{- if eq $v.store.type "postgres" }}
    # The shared policy store: users, grants, tokens and sessions hold on every replica. The URL (its
    # password in it) is a mounted file, so it is not in the environment (/proc/<pid>/environ).
    - name: FLOWGATE_DATABASE_URL_FILE
      value: /etc/flowgate/postgres/url
    - name: FLOWGATE_DATABASE_POOL_SIZE
      value: {{ $v.store.postgres.poolSize | int64 | quote }}
    - name: FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS
      value: {{ $v.store.postgres.statementTimeoutMs | int64 | quote }}
    - name: FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS
      value: {{ $v.store.postgres.connectTimeoutMs | int64 | quote }}
    {{- if $v.store.postgres.caSecret.name }}
    - name: FLOWGATE_DATABASE_CA_FILE
      value: {{ printf "/etc/flowgate/postgres-ca/%s" $v.store.postgres.caSecret.key | quote }}
    {{- end }}
    {{- else }}
    - name: FLOWGATE_DB_PATH
      value: /var/lib/flowgate/flowgate.db
    {{- end }}
    - name: FLOWGATE_DEFAULT_PERMISSION
      value: {{ $v.config.defaultPermission | quote }}
    - name: FLOWGATE_CREATE_REQUIRES_ADMIN
      value: {{ $v.config.createRequiresAdmin | quote }}
    - name: FLOWGATE_ENFORCE
      value: {{ $v.config.enforce | quote }}
    - name: FLOWGATE_LOG_LEVEL
      value: {{ $v.config.logLevel | quote }}
    - name: FLOWGATE_MAX_BODY_BYTES
      value: {{ $v.config.maxBodyBytes | int64 | quote }}
    - name: FLOWGATE_TOKEN_MAX_DAYS
      value: {{ $v.config.tokenMaxDays | int64 | quote }}
    - name: FLOWGATE_TOKEN_CACHE_SIZE
      value: {{ $v.config.tokenCacheSize | int64 | quote }}
    - name: FLOWGATE_LOOKUP_CACHE_SIZE
      value: {{ $v.config.lookupCacheSize | int64 | quote }}
    - name: FLOWGATE_LOOKUP_CACHE_TTL_MS
      value: {{ $v.config.lookupCacheTtlMs | int64 | quote }}
    - name: FLOWGATE_TRUSTED_REQUEST_ID_HEADER
      value: {{ $v.config.trustedRequestIdHeader | quote }}
    - name: FLOWGATE_SESSION_COOKIE_SECURE
      value: {{ $v.config.session.cookieSecure | quote }}
    - name: FLOWGATE_SESSION_IDLE_MINUTES
      value: {{ $v.config.session.idleMinutes | int64 | quote }}
    - name: FLOWGATE_SESSION_ABSOLUTE_HOURS
      value: {{ $v.config.session.absoluteHours | int64 | quote }}
    {{- if $v.admin.enabled }}
    - name: FLOWGATE_ADMIN_USERNAME
      value: {{ $v.admin.username | quote }}
    - name: FLOWGATE_ADMIN_TOKEN_FILE
      value: /etc/flowgate/admin/token
    {{- end }}
    {{- if $v.oidc.enabled }}
    - name: FLOWGATE_OIDC_ISSUER_URL
      value: {{ $v.oidc.issuerUrl | quote }}
    - name: FLOWGATE_OIDC_CLIENT_ID
      value: {{ $v.oidc.clientId | quote }}
    {{- if $v.oidc.clientSecret.name }}
    - name: FLOWGATE_OIDC_CLIENT_SECRET_FILE
      value: /etc/flowgate/oidc/client-secret
    {{- end }}
    - name: FLOWGATE_OIDC_REDIRECT_URL
      value: {{ $v.oidc.redirectUrl | quote }}
    - name: FLOWGATE_OIDC_SCOPES
      value: {{ $v.oidc.scopes | quote }}
    - name: FLOWGATE_OIDC_GROUPS_CLAIM
      value: {{ $v.oidc.groupsClaim | quote }}
    - name: FLOWGATE_OIDC_USERNAME_CLAIM
      value: {{ $v.oidc.usernameClaim | quote }}
    {{- if $v.oidc.insecureAllowUnverifiedEmail }}
    - name: FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL
      value: "true"
    {{- end }}
    - name: FLOWGATE_OIDC_DISPLAY_NAME_CLAIM
      value: {{ $v.oidc.displayNameClaim | quote }}
    {{- with $v.oidc.adminRole }}
    - name: FLOWGATE_OIDC_ADMIN_ROLE
      value: {{ . | quote }}
    {{- end }}
    {{- with $v.oidc.allowedRoles }}
    - name: FLOWGATE_OIDC_ALLOWED_ROLES
      value: {{ join "," . | quote }}
    {{- end }}
    {{- end }}
    {{- if $v.bearer.issuers }}
    # Bearer JWTs of these issuers (docs/machine-identity.md); the JSON keeps each issuer's keys as given.
    - name: FLOWGATE_BEARER_ISSUERS
      value: {{ toJson $v.bearer.issuers | quote }}
    - name: FLOWGATE_BEARER_CLOCK_SKEW_SECONDS
      value: {{ $v.bearer.clockSkewSeconds | int64 | quote }}
    - name: FLOWGATE_BEARER_MAX_TOKEN_BYTES
      value: {{ $v.bearer.maxTokenBytes | int64 | quote }}
    {{- end }}
    {{- if $v.pageTokenKeySecret.name }}
    - name: FLOWGATE_PAGE_TOKEN_KEY_FILE
      value: {{ printf "/etc/flowgate/page-token-key/%s" $v.pageTokenKeySecret.key | quote }}
    {{- end }}
    {{- if $v.inference.enabled }}
    - name: FLOWGATE_INFERENCE_CONFIG_FILE
      value: {{ printf "/etc/flowgate/inference/%s" $v.inference.routesConfigMap.key | quote }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  readinessProbe:
    httpGet:
      path: {{ printf "%s/readyz" $v.config.basePath }}
      port: http
    {{- toYaml $v.probes.readiness | nindent 4 }}
  livenessProbe:
    httpGet:
      path: {{ printf "%s/healthz" $v.config.basePath }}
      port: http
    {{- toYaml $v.probes.liveness | nindent 4 }}
  # Holds the liveness probe off while flowgate migrates the store and loads its policy.
  startupProbe:
    httpGet:
      path: {{ printf "%s/healthz" $v.config.basePath }}
      port: http
    {{- toYaml $v.probes.startup | nindent 4 }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  volumeMounts:
    {{- if eq $v.store.type "sqlite" }}
    - name: policy-store
      mountPath: /var/lib/flowgate
    {{- end }}
    {{- if $v.admin.enabled }}
    - name: admin-token
      mountPath: /etc/flowgate/admin
      readOnly: true
    {{- end }}
    {{- if eq $v.store.type "postgres" }}
    - name: postgres-url
      mountPath: /etc/flowgate/postgres
      readOnly: true
    {{- end }}
    {{- if and $v.oidc.enabled $v.oidc.clientSecret.name }}
    - name: oidc-client-secret
      mountPath: /etc/flowgate/oidc
      readOnly: true
    {{- end }}
    {{- if and (eq $v.store.type "postgres") $v.store.postgres.caSecret.name }}
    - name: postgres-ca
      mountPath: /etc/flowgate/postgres-ca
      readOnly: true
    {{- end }}
    {{- if $v.pageTokenKeySecret.name }}
    - name: page-token-key
      mountPath: /etc/flowgate/page-token-key
      readOnly: true
    {{- end }}
    {{- if $v.bearer.jwksConfigMap.name }}
    - name: bearer-keys
      mountPath: /etc/flowgate/bearer-keys
      readOnly: true
    {{- end }}
    {{- if $v.inference.enabled }}
    - name: inference-routes
      mountPath: /etc/flowgate/inference
      readOnly: true
    - name: inference-keys
      mountPath: {{ $v.inference.keysSecret.mountPath }}
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The volumes the flowgate container mounts. Secrets as directories: kubelet updates them in place. */}}
{{- define "flowgate.volumes" -}}
{{- $v := .Values -}}
{{- if eq $v.store.type "sqlite" }}
- name: policy-store
  persistentVolumeClaim:
    claimName: {{ include "flowgate.sqliteClaim" . }}
{{- end }}
{{- if $v.admin.enabled }}
- name: admin-token
  secret:
    secretName: {{ $v.admin.tokenSecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
    items:
      - key: {{ $v.admin.tokenSecret.key }}
        path: token
{{- end }}
{{- if eq $v.store.type "postgres" }}
- name: postgres-url
  secret:
    secretName: {{ $v.store.postgres.urlSecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
    items:
      - key: {{ $v.store.postgres.urlSecret.key }}
        path: url
{{- end }}
{{- if and $v.oidc.enabled $v.oidc.clientSecret.name }}
- name: oidc-client-secret
  secret:
    secretName: {{ $v.oidc.clientSecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
    items:
      - key: {{ $v.oidc.clientSecret.key }}
        path: client-secret
{{- end }}
{{- if and (eq $v.store.type "postgres") $v.store.postgres.caSecret.name }}
- name: postgres-ca
  secret:
    secretName: {{ $v.store.postgres.caSecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
    items:
      - key: {{ $v.store.postgres.caSecret.key }}
        path: {{ $v.store.postgres.caSecret.key }}
{{- end }}
{{- if $v.pageTokenKeySecret.name }}
- name: page-token-key
  secret:
    secretName: {{ $v.pageTokenKeySecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
    items:
      - key: {{ $v.pageTokenKeySecret.key }}
        path: {{ $v.pageTokenKeySecret.key }}
{{- end }}
{{- if $v.bearer.jwksConfigMap.name }}
- name: bearer-keys
  configMap:
    name: {{ $v.bearer.jwksConfigMap.name }}
{{- end }}
{{- if $v.inference.enabled }}
- name: inference-routes
  configMap:
    name: {{ $v.inference.routesConfigMap.name }}
- name: inference-keys
  secret:
    secretName: {{ $v.inference.keysSecret.name }}
    defaultMode: 256 # 0400, written in decimal: YAML 1.2 readers take 0400 as decimal 400 (0620)
{{- end }}
{{- with $v.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Scrape annotations, for a Prometheus without the Operator. */}}
{{- define "flowgate.podAnnotations" -}}
{{- if .Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.config.metricsPort | int64 | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* MLflow's container: unmodified, reachable only through flowgate. */}}
{{- define "flowgate.mlflowContainer" -}}
{{- $v := .Values -}}
{{- $m := $v.mlflow -}}
- name: mlflow
  image: {{ printf "%s:%s" $m.image.repository $m.image.tag }}
  imagePullPolicy: {{ $m.image.pullPolicy }}
  args:
    - mlflow
    - server
    {{- if eq $v.mode "sidecar" }}
    - --host=127.0.0.1
    {{- else }}
    - --host=0.0.0.0
    {{- end }}
    - {{ printf "--port=%v" $m.port }}
    {{- with $m.staticPrefix }}
    - {{ printf "--static-prefix=%s" . }}
    {{- end }}
    # MLflow refuses any other Host (DNS-rebinding guard); flowgate always sends this one.
    - {{ printf "--allowed-hosts=%s" (include "flowgate.upstreamHost" .) }}
    {{- with $m.artifactsDestination }}
    - {{ printf "--artifacts-destination=%s" . }}
    - --serve-artifacts
    {{- end }}
    {{- with $m.extraArgs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if ne $v.mode "sidecar" }}
  ports:
    - name: mlflow
      containerPort: {{ $m.port }}
  {{- end }}
  env:
    # The image has no user for the uid it runs as: HOME on the writable /tmp.
    - name: HOME
      value: /tmp
    {{- if $m.drivers }}
    - name: PYTHONPATH
      value: /opt/mlflow-drivers
    {{- end }}
    {{- include "flowgate.secretEnv" (dict "name" "MLFLOW_BACKEND_STORE_URI" "secret" $m.backendStoreUri) | nindent 4 }}
    {{- range $m.secretEnv }}
    {{- include "flowgate.secretEnv" (dict "name" .name "secret" (dict "name" .secretName "key" .key)) | nindent 4 }}
    {{- end }}
    {{- with $m.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- $health := printf "http://127.0.0.1:%v%s/health" $m.port $m.staticPrefix }}
  # From inside the container: in sidecar mode MLflow listens on loopback only, out of the kubelet's
  # reach. /health is exempt from MLflow's Host check. The startup probe covers its migrations.
  startupProbe:
    exec:
      command: ["python", "-c", {{ printf "import urllib.request; urllib.request.urlopen('%s', timeout=4)" $health | quote }}]
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 30
  livenessProbe:
    exec:
      command: ["python", "-c", {{ printf "import urllib.request; urllib.request.urlopen('%s', timeout=4)" $health | quote }}]
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 3
  {{- with $m.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $m.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: mlflow-tmp
      mountPath: /tmp
    {{- if $m.drivers }}
    - name: mlflow-drivers
      mountPath: /opt/mlflow-drivers
      readOnly: true
    {{- end }}
{{- end -}}

{{/* MLflow's image carries neither the PostgreSQL driver nor boto3: installed beside it at start. */}}
{{- define "flowgate.mlflowInitContainers" -}}
{{- $m := .Values.mlflow -}}
{{- if $m.drivers }}
- name: mlflow-drivers
  image: {{ printf "%s:%s" $m.image.repository $m.image.tag }}
  imagePullPolicy: {{ $m.image.pullPolicy }}
  command: {{ concat (list "python" "-m" "pip" "install" "--no-cache-dir" "--target=/opt/mlflow-drivers") $m.drivers | toJson }}
  env:
    - name: HOME
      value: /tmp
  {{- with $m.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: mlflow-tmp
      mountPath: /tmp
    - name: mlflow-drivers
      mountPath: /opt/mlflow-drivers
{{- end }}
{{- end -}}

{{- define "flowgate.mlflowVolumes" -}}
- name: mlflow-tmp
  emptyDir: {}
{{- if .Values.mlflow.drivers }}
- name: mlflow-drivers
  emptyDir: {}
{{- end }}
{{- end -}}

{{- define "flowgate.podCommon" -}}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
