#!/usr/bin/env bash
# make cluster-under-load: the whole `make cluster` while as many busy loops
# as there are cores keep every core busy (hack/busy-loops.sh, as make
# test-under-load): the cluster's waits must follow progress, not fail a run
# that is slow. Prints the outcome and how long it took; the log is
# bin/cluster-under-load.log as well as the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/busy-loops.sh
mkdir -p bin
start_load
start=$(date +%s)
rc=0
make cluster 2>&1 | tee bin/cluster-under-load.log || rc=$?
took=$(($(date +%s) - start))
outcome=passed
((rc == 0)) || outcome=FAILED
printf 'make cluster under load (%s busy loops): %s in %dm%02ds (bin/cluster-under-load.log)\n' "$(nproc)" "$outcome" $((took / 60)) $((took % 60))
exit "$rc"
