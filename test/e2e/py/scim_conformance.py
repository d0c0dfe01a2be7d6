"""Runs scim2-tester's checks against a SCIM server and prints one JSON document of the results.

Usage: python scim_conformance.py <base-url ending in /scim/v2> (the bearer token in SCIM_TOKEN).
"""

import json
import os
import sys
from collections import Counter

from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import check_server

base = sys.argv[1]
http = Client(base_url=base, headers={"Authorization": f"Bearer {os.environ['SCIM_TOKEN']}"}, timeout=30)
scim = SyncSCIMClient(http)
results = check_server(scim)
counts = Counter(r.status.name for r in results)
print(
    json.dumps(
        {
            "counts": counts,
            "results": [
                {"status": r.status.name, "title": r.title, "resource_type": r.resource_type, "reason": (r.reason or "")[:400]}
                for r in results
            ],
        }
    )
)
