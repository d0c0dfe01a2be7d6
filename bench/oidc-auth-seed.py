"""Creates the bench's admin and ordinary user in mlflow-oidc-auth's own store, with one access token each.

Run with the plugin's venv and the server's OIDC_USERS_DB_URI, after the server created the store (its
migrations run at start). The plugin hands out tokens only to someone signed in through its OIDC login,
so the bench, which has no identity provider for it, goes through the plugin's own store API instead.
Prints {"admin": token, "user": token} on stdout.
"""

import json
import sys
from datetime import datetime, timedelta, timezone

from mlflow_oidc_auth.store import store


def main(admin: str, user: str) -> None:
    expires = datetime.now(timezone.utc).replace(tzinfo=None) + timedelta(days=30)
    tokens = {}
    for key, username, is_admin in (("admin", admin, True), ("user", user, False)):
        store.create_user(username, username, is_admin=is_admin)
        _, plaintext = store.create_user_token(username, "bench", expires, None)
        tokens[key] = plaintext
    json.dump(tokens, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
