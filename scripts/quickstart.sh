#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then run cairn end to end
# on generated data with the embedded default store (a directory; no server needed):
#   cairn ingest   reads generated records from stdin, acknowledges them durably through the
#                  journal's group commit, and publishes a checkpoint every 16 MiB and at the end;
#   cairn verify --deep   fetches the published graph back and proves it equals the journal;
#   cairn log      shows the chain of heads, newest first.
#   CAIRN_QUICKSTART_DIR      where the demo database and store go (default: a new temp dir)
#   CAIRN_QUICKSTART_RECORDS  how many records (default 1000000, about 60 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release >/dev/null
cairn=$PWD/build/engine/cairn
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
