#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then run cairn end to end
# on generated data. Until publication lands this is: create a database, append records
# through group commit, print the journal's lineage and prefix, and check the prefix hash
# against sha256sum of the journal file.
#   CAIRN_QUICKSTART_DIR   where the demo database goes (default: a new temp directory)
#   CAIRN_QUICKSTART_RECORDS  how many records (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release >/dev/null
cairn=$PWD/build/engine/cairn
dir=${CAIRN_QUICKSTART_DIR:-$(mktemp -d /tmp/cairn-quickstart.XXXXXX)}
records=${CAIRN_QUICKSTART_RECORDS:-200000}

echo "== cairn init $dir/db"
"$cairn" init "$dir/db" --db-id quickstart
echo "== appending $records generated records (one per line)"
start=$(date +%s.%N)
python3 -c "
import sys
for i in range($records):
    sys.stdout.write('{\"event\":%d,\"user\":\"u%d\",\"value\":%d}\n' % (i, i % 977, i * 31 % 10007))
" | "$cairn" append "$dir/db" --json
end=$(date +%s.%N)
python3 -c "print('   %.0f durable appends/s' % ($records / ($end - $start)))"
echo "== cairn journal $dir/db --json"
"$cairn" journal "$dir/db" --json | tee "$dir/journal.json"
want=$(python3 -c "import json; print(json.load(open('$dir/journal.json'))['prefix_sha256'])")
got=$(sha256sum "$dir/db/journal" | cut -d' ' -f1)
if [ "$want" != "$got" ]; then
  echo "prefix hash $want differs from sha256sum $got" >&2
  exit 1
fi
echo "== prefix hash equals sha256sum of the journal file: $got"
