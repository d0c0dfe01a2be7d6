"""Runs a list of MLflow client operations as one user and prints each outcome as JSON.

Input (stdin): [[label, op, args...], ...]. Output: {label: {"ok": bool, "value"|"error": ...}}.
The real MLflow Python client does the HTTP: credentials come from MLFLOW_TRACKING_* in the env.
"""
import json
import os
import sys
import tempfile

import mlflow
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

client = MlflowClient()


def classify(exc):
    text = str(exc)
    code = getattr(exc, "error_code", None)
    if code in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
        return code
    if "PERMISSION_DENIED" in text or " 403" in text or "403 Client Error" in text:
        return "PERMISSION_DENIED"
    if "UNAUTHENTICATED" in text or " 401" in text or "401 Client Error" in text:
        return "UNAUTHENTICATED"
    return f"{code or type(exc).__name__}: {text[:300]}"


def get_experiment(exp_id):
    return client.get_experiment(exp_id).name


def get_run(run_id):
    return client.get_run(run_id).info.experiment_id


def log_metric(run_id):
    client.log_metric(run_id, "loss", 0.5)
    return True


def create_logged_model(exp_id):
    return client.create_logged_model(exp_id, name="lm").model_id


def log_batch_on_model(run_id, key, model_id):
    import time

    from mlflow.entities import Metric

    client.log_batch(run_id, metrics=[Metric(key, 0.9, int(time.time() * 1000), 0, model_id=model_id)])
    return True


def metric_keys(run_id):
    return sorted(client.get_run(run_id).data.metrics.keys())


def create_dataset(name, exp_ids):
    from mlflow.genai.datasets import create_dataset as make

    return make(name=name, experiment_id=list(exp_ids)).dataset_id


def get_dataset(dataset_id):
    from mlflow.genai.datasets import get_dataset as fetch

    return fetch(dataset_id=dataset_id).name


def add_dataset_record(dataset_id, question):
    from mlflow.genai.datasets import get_dataset as fetch

    fetch(dataset_id=dataset_id).merge_records([{"inputs": {"question": question}, "expectations": {"answer": "42"}}])
    return True


def log_artifact(run_id, name):
    d = tempfile.mkdtemp()
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("hello from " + os.environ.get("MLFLOW_TRACKING_USERNAME", "?"))
    client.log_artifact(run_id, path)
    return True


def download_artifact(run_id, path):
    local = client.download_artifacts(run_id, path, tempfile.mkdtemp())
    with open(local) as f:
        return f.read()


def list_artifacts(run_id):
    return sorted(a.path for a in client.list_artifacts(run_id))


def delete_run(run_id):
    client.delete_run(run_id)
    return True


def create_experiment(name):
    return client.create_experiment(name)


def search_experiment_pages(max_results, prefix):
    pages, token = [], None
    while True:
        page = client.search_experiments(max_results=max_results, page_token=token, filter_string=f"name LIKE '{prefix}%'")
        pages.append(sorted(e.name for e in page))
        token = page.token
        if not token:
            return pages
        if len(pages) > 20:
            raise RuntimeError("too many pages")


def search_runs(exp_ids):
    return sorted(r.info.run_id for r in client.search_runs(exp_ids))


def create_run(exp_id):
    return client.create_run(exp_id).info.run_id


def create_registered_model(name):
    return client.create_registered_model(name).name


def create_model_version(name, run_id):
    run = client.get_run(run_id)
    return client.create_model_version(name, run.info.artifact_uri + "/model", run_id=run_id).version


def create_model_version_from(name, source, run_id):
    return client.create_model_version(name, source, run_id=run_id or None).version


def get_registered_model(name):
    return client.get_registered_model(name).name


def set_alias(name, alias, version):
    client.set_registered_model_alias(name, alias, version)
    return True


def get_by_alias(name, alias):
    return client.get_model_version_by_alias(name, alias).version


def delete_model_version(name, version):
    client.delete_model_version(name, version)
    return True


def search_registered_models():
    return sorted(m.name for m in client.search_registered_models())


def _prompts():
    # MLflow 3.0 has the prompt registry only at the top level; 3.1 added `mlflow.genai`'s.
    return mlflow.genai if hasattr(mlflow.genai, "register_prompt") else mlflow


def register_prompt(name, template):
    # MLflow 3.0 answers the version as a string.
    return int(_prompts().register_prompt(name=name, template=template).version)


def load_prompt(name, version):
    return _prompts().load_prompt(f"prompts:/{name}/{version}").template


def log_trace(exp_id, label):
    mlflow.set_experiment(experiment_id=exp_id)
    with mlflow.start_span(name=label) as span:
        span.set_inputs({"q": label})
        span.set_outputs({"a": 42})
    return span.trace_id


def search_traces(exp_id):
    import inspect

    # `locations` replaced `experiment_ids` in MLflow 3.9; older clients know only the latter.
    where = "locations" if "locations" in inspect.signature(mlflow.search_traces).parameters else "experiment_ids"
    traces = mlflow.search_traces(**{where: [exp_id]}, return_type="list")
    return sorted(t.info.trace_id for t in traces)


OPS = {name: fn for name, fn in globals().items() if callable(fn) and not name.startswith("_") and name not in ("classify", "MlflowClient", "MlflowException")}

results = {}
for label, op, *args in json.load(sys.stdin):
    try:
        results[label] = {"ok": True, "value": OPS[op](*args)}
    except Exception as exc:  # noqa: BLE001 - every failure is an outcome to report
        results[label] = {"ok": False, "error": classify(exc)}
print("@@RESULT@@" + json.dumps(results))
