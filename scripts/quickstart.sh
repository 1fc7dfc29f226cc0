#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then run cairn end to end
# on generated data with the embedded default store (a directory; no server needed):
#   cairn ingest   reads generated records from stdin, acknowledges them durably through the
#                  journal's group commit, and publishes a checkpoint every 16 MiB and at the end;
#   cairn verify --deep   fetches the published graph back and proves it equals the journal;
#   cairn log      shows the chain of heads, newest first;
#   cairn serve    the lake catalog on the same kind of store: a lake and a token are made, the
#                  server starts, a namespace and a table are created, a commit lands, the
#                  table is loaded back, and the server stops (SIGTERM; it exits 0).
#   CAIRN_QUICKSTART_DIR      where the demo database and store go (default: a new temp dir)
#   CAIRN_QUICKSTART_RECORDS  how many records (default 1000000, about 60 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
bash scripts/build.sh command >/dev/null
cairn=$PWD/build/cli/cairn
dir=${CAIRN_QUICKSTART_DIR:-$(mktemp -d /tmp/cairn-quickstart.XXXXXX)}
records=${CAIRN_QUICKSTART_RECORDS:-1000000}

echo "== generating $records records | cairn ingest $dir/db --store $dir/store"
python3 -c "
import sys
w = sys.stdout.write
for i in range($records):
    w('{\"event\":%d,\"user\":\"u%d\",\"value\":%d,\"note\":\"%s\"}\n' % (i, i % 977, i * 31 % 10007, 'x' * (i % 40)))
" | "$cairn" ingest "$dir/db" --db-id quickstart --store "$dir/store" --checkpoint-mib 16 --json |
  tee "$dir/ingest.json"
echo "== cairn verify $dir/db --deep"
"$cairn" verify "$dir/db" --deep
echo "== cairn status $dir/db"
"$cairn" status "$dir/db"
ns=$(python3 -c "import json; print(json.load(open('$dir/ingest.json'))['namespace'])")
echo "== cairn log --store $dir/store --namespace $ns"
"$cairn" log --store "$dir/store" --namespace "$ns"

echo "== the catalog: cairn lake create, cairn token create, cairn serve on $dir/lake"
"$cairn" lake create --config "$dir/catalog.json" --store "$dir/lake" --lake demo
token=$("$cairn" token create --config "$dir/catalog.json" --lake demo --role read-write)
"$cairn" serve --config "$dir/catalog.json" --listen 127.0.0.1:0 2>"$dir/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "serving" "$dir/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*serving .* on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/serve.log")
TOKEN=$token PORT=$port python3 - <<'PY'
import json, os, urllib.request
base = f"http://127.0.0.1:{os.environ['PORT']}/v1"
auth = {"Authorization": f"Bearer {os.environ['TOKEN']}", "Content-Type": "application/json"}
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, headers=auth,
                                 data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"{}")
prefix = call("GET", "/config?warehouse=demo")["overrides"]["prefix"]
print("config: prefix", prefix)
call("POST", f"/{prefix}/namespaces", {"namespace": ["events"]})
schema = {"type": "struct", "fields": [{"id": 1, "name": "event", "type": "long", "required": True},
                                       {"id": 2, "name": "user", "type": "string", "required": False}]}
created = call("POST", f"/{prefix}/namespaces/events/tables", {"name": "clicks", "schema": schema})
print("created events.clicks:", created["metadata-location"])
committed = call("POST", f"/{prefix}/namespaces/events/tables/clicks",
                 {"requirements": [{"type": "assert-table-uuid", "uuid": created["metadata"]["table-uuid"]}],
                  "updates": [{"action": "set-properties", "updates": {"owner": "quickstart"}}]})
print("committed:", committed["metadata-location"])
loaded = call("GET", f"/{prefix}/namespaces/events/tables/clicks")
assert loaded["metadata-location"] == committed["metadata-location"]
assert loaded["metadata"]["properties"]["owner"] == "quickstart"
print("loaded back: properties", loaded["metadata"]["properties"])
print("table log namespace:", loaded["metadata"]["table-uuid"])
PY
kill -TERM "$server"
wait "$server"
trap - EXIT
echo "== the catalog stopped (exit 0); its request log is $dir/serve.log"
