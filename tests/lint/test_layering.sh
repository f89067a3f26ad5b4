#!/usr/bin/env bash
# The layering rules hold on the tree, and the checker catches a planted breach of each kind.
set -u
SRC=${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
python3 "$SRC/tests/lint/layering.py" "$SRC" || { echo "FAIL: the tree breaks the layering"; fails=1; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for breach in "worker/runner.cpp:#include \"worker/checks/gpu/common.hpp\"" \
              "worker/checks/rdma/memory.cpp:#include \"worker/checks/gpu/common.hpp\"" \
              "common/types.cpp:#include \"coordinator/report.hpp\"" \
              "coordinator/analysis/judge.cpp:#include <fstream>" \
              "coordinator/campaign.cpp:#include \"worker/check.hpp\""; do
  rm -rf "$TMP/t"; mkdir -p "$TMP/t"
  cp -r "$SRC/common" "$SRC/slurm" "$SRC/worker" "$SRC/coordinator" "$TMP/t/"
  file=${breach%%:*}; line=${breach#*:}
  echo "$line" >> "$TMP/t/$file"
  if python3 "$SRC/tests/lint/layering.py" "$TMP/t" >/dev/null; then
    echo "FAIL: planted breach not caught: $file: $line"; fails=1
  else
    echo "ok: caught $file: $line"
  fi
done
[ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fails
