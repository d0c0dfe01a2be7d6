#!/usr/bin/env python3
"""Print every HTTP route the installed MLflow server answers, as JSON.

Output: [{"methods": ["GET", ...], "rule": "/api/2.0/mlflow/runs/get", "source": "flask" | "fastapi"}]

Both apps are imported the way `mlflow server` builds them under uvicorn: the FastAPI app
(`mlflow.server.fastapi_app:app`) holds native routers and mounts the Flask app at `/`. Releases
without `mlflow.server.fastapi_app` (3.0.x) serve the Flask app alone (under gunicorn).
Placeholders are kept in their framework's own syntax (`<path:x>` for Flask, `{x:path}` for
FastAPI) so a checker can tell a single segment from a multi-segment path.
Run without MLFLOW_STATIC_PREFIX set: the catalog is relative to MLflow's root.
"""

import inspect
import json
import os
import sys

# The catalog describes routes relative to MLflow's root; a prefix would shift every rule.
os.environ.pop("_MLFLOW_STATIC_PREFIX", None)

# Flask treats HEAD and OPTIONS as implicit on every rule; flowgate maps HEAD to GET itself
# and OPTIONS is answered by CORS handling, so neither is part of a route's identity.
IMPLICIT_METHODS = {"HEAD", "OPTIONS"}


def flask_routes(flask_app):
    for rule in flask_app.url_map.iter_rules():
        methods = sorted(set(rule.methods or []) - IMPLICIT_METHODS)
        yield {"methods": methods, "rule": rule.rule, "source": "flask", "endpoint": rule.endpoint}


def fastapi_routes(routes, prefix=""):
    from starlette.routing import Mount, Route, WebSocketRoute

    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            # FastAPI >= 0.16x keeps `include_router` lazy: the included router's own routes
            # (already carrying the router's `prefix=`) sit behind the include's extra prefix.
            extra = prefix + getattr(route.include_context, "prefix", "")
            low_priority = getattr(included, "_low_priority_routes", [])
            yield from fastapi_routes(list(included.routes) + list(low_priority), extra)
        elif isinstance(route, Mount):
            sub_routes = getattr(route.app, "routes", None)
            if sub_routes is not None:
                yield from fastapi_routes(sub_routes, prefix + route.path)
            else:
                # A mounted non-Starlette app (the Flask WSGI bridge): reported, then listed
                # through Flask's own url_map.
                yield {"methods": ["*"], "rule": prefix + route.path + "/*", "source": "mount"}
        elif isinstance(route, WebSocketRoute):
            yield {"methods": ["WEBSOCKET"], "rule": prefix + route.path, "source": "fastapi"}
        elif isinstance(route, Route):
            methods = sorted(set(route.methods or []) - IMPLICIT_METHODS)
            yield {
                "methods": methods,
                "rule": prefix + route.path,
                "source": "fastapi",
                "endpoint": getattr(route, "name", None),
            }


def main():
    from mlflow.server import app as flask_app

    try:
        from mlflow.server.fastapi_app import create_fastapi_app
    except ImportError:
        create_fastapi_app = None

    routes = list(flask_routes(flask_app))
    if create_fastapi_app is not None:
        # Before 3.4 it took no argument and wrapped `mlflow.server.app` itself.
        takes_app = len(inspect.signature(create_fastapi_app).parameters) > 0
        fastapi_app = create_fastapi_app(flask_app) if takes_app else create_fastapi_app()
        routes = list(fastapi_routes(fastapi_app.routes)) + routes
    json.dump(routes, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
