/**
 * MLflow answers "which experiment holds this trace" in two forms: v3 `GET /api/3.0/mlflow/traces/<id>`
 * (not in MLflow 3.0.x) and v2 `GET /api/2.0/mlflow/traces/<id>/info` (deprecated, still served by
 * 3.17). Which one to ask is learnt from MLflow's `/version`, corrected by what MLflow answers.
 */
export type TraceInfoForm = 'v3' | 'v2';

export const otherForm = (form: TraceInfoForm): TraceInfoForm => (form === 'v3' ? 'v2' : 'v3');

/** The form an MLflow of this version serves; undefined when the version is unknown. */
export function traceFormOf(version: string | undefined): TraceInfoForm | undefined {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return undefined;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 3 || (major === 3 && minor >= 1) ? 'v3' : 'v2';
}

export interface TraceInfoForms {
  /** The form to ask first; reads `/version` first when it is not known (one read shared by all callers). */
  current(): Promise<TraceInfoForm>;
  /** MLflow answered this form: keep asking it. */
  answered(form: TraceInfoForm): void;
  /** MLflow said it has no such route: the other form from now on. */
  missing(form: TraceInfoForm): void;
  /** MLflow went away: it may come back as another version, so `/version` is read again. */
  forget(): void;
}

/**
 * `startVersion` is what `/version` said at start; `readVersion` reads it again (undefined when
 * MLflow does not tell). Without either, v3 is tried first.
 */
export function createTraceInfoForms(
  readVersion: (() => Promise<string | undefined>) | undefined,
  startVersion?: string,
): TraceInfoForms {
  const known = traceFormOf(startVersion);
  let form: TraceInfoForm = known ?? 'v3';
  let settled = readVersion === undefined || known !== undefined;
  let reading: Promise<void> | undefined;

  function read(): Promise<void> {
    reading ??= readVersion!()
      .then((version) => {
        const learnt = traceFormOf(version);
        if (learnt) form = learnt;
        // Unknown (MLflow down, or no `/version`): the form stays, and `/version` is read again until
        // MLflow answers either it or a look-up.
        settled = learnt !== undefined;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  }

  return {
    async current() {
      if (!settled) await read();
      return form;
    },
    answered(tried) {
      form = tried;
      settled = true;
    },
    missing(tried) {
      form = otherForm(tried);
      settled = true;
    },
    forget() {
      if (readVersion) settled = false;
    },
  };
}
