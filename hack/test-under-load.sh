#!/usr/bin/env bash
# make test-under-load: the whole `make test`, RUNS times in a row (default
# 3), while as many busy loops as there are cores keep every core busy — the
# loaded 2-core machine the tests must hold on. Prints each run's outcome
# and time; exits non-zero if any run failed. Logs: bin/test-under-load-N.log.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
. hack/busy-loops.sh
start_load
failed=0
for i in $(seq "$runs"); do
	start=$(date +%s)
	# -count=1: every run runs every test (go test would replay cached passes).
	if make test GO_TEST_FLAGS=-count=1 >"bin/test-under-load-$i.log" 2>&1; then
		outcome=passed
	else
		outcome=FAILED
		failed=$((failed + 1))
		grep -E -- '^(--- FAIL|FAIL|panic)' "bin/test-under-load-$i.log" | head -20 || true
	fi
	echo "run $i of $runs: $outcome in $(($(date +%s) - start))s (bin/test-under-load-$i.log)"
done
echo "$((runs - failed)) passed, $failed failed"
((failed == 0))
