# Sourced by the *-under-load scripts: start_load keeps every core busy with
# a shell busy loop each (pure CPU, at the caller's own priority), the loaded
# 2-core machine the tests and the cluster must hold on; they stop when the
# sourcing script exits.
load_pids=()
stop_load() { for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
start_load() {
	local cores
	cores=$(nproc)
	trap stop_load EXIT
	for _ in $(seq "$cores"); do
		bash -c 'while :; do :; done' &
		load_pids+=($!)
	done
	echo "load: $cores busy loops on $cores cores"
}
