"""An mlflow-oidc-auth database made and read by the plugin's own code (issue 37's import tests).

stdin: {"db": path, "revision": "head" | an alembic revision, "seed": [...], "ask": [...]}
- migrates a new SQLite file with the plugin's alembic migrations to `revision`;
- `seed` (head only): calls of the plugin's own store (`mlflow_oidc_auth.store.store`), each
  [method, *args];
- `ask`: [username, kind, id, experiment_name_or_scorer_name]: the permission the plugin's own
  resolver (`utils.grant_context.resolve`, `resolve_scorer`: what its hooks call) gives, with its
  default PERMISSION_SOURCE_ORDER and DEFAULT_MLFLOW_PERMISSION and workspaces off; administrators
  are let through before resolution, as its hooks do.
Prints @@RESULT@@ and a JSON list of answers.
"""

import json
import os
import sys

req = json.load(sys.stdin)
db = req["db"]
os.environ["OIDC_USERS_DB_URI"] = f"sqlite:///{db}"
os.environ.setdefault("SECRET_KEY", "import-test-secret-key-0123456789")

from sqlalchemy import create_engine  # noqa: E402

from mlflow_oidc_auth.db.utils import migrate  # noqa: E402

migrate(create_engine(f"sqlite:///{db}"), req.get("revision", "head"))

answers = []
if req.get("seed") or req.get("ask"):
    from mlflow_oidc_auth.store import store  # noqa: E402
    from mlflow_oidc_auth.utils.grant_context import load_grant_context, resolve, resolve_scorer  # noqa: E402

    for method, *args in req.get("seed", []):
        getattr(store, method)(*args)
    for username, kind, resource_id, name in req.get("ask", []):
        if store.get_user(username).is_admin:
            answers.append("ADMIN")
            continue
        ctx = load_grant_context(username)
        if kind == "experiment":
            ctx.note_experiment(resource_id, name)
            answers.append(resolve(ctx, "experiment", resource_id, name=name).permission.name)
        elif kind == "scorer":
            experiment_id, experiment_name, scorer_name = resource_id, *name
            ctx.note_experiment(experiment_id, experiment_name)
            answers.append(resolve_scorer(ctx, experiment_id, scorer_name).permission.name)
        else:
            answers.append(resolve(ctx, kind, resource_id).permission.name)
print("@@RESULT@@" + json.dumps(answers))
