#!/usr/bin/env bash
# The quick-start demo: `ndp plan -o text` on every shipped example pair,
# with the built-in default policy, and chrony again with its user policy.
set -euo pipefail
cd "$(dirname "$0")/.."
ndp=${NDP:-bin/ndp}
examples=examples/machineconfigs

plan() {
	local name=$1; shift
	echo "\$ ndp plan -o text --from $examples/$name/old.yaml --to $examples/$name/new.yaml $*"
	local code=0
	"$ndp" plan -o text --from "$examples/$name/old.yaml" --to "$examples/$name/new.yaml" "$@" || code=$?
	case $code in
	0) ;;
	3) echo "(exit 3: unreconcilable)" ;;
	*) echo "ndp plan failed with exit code $code" >&2; exit "$code" ;;
	esac
	echo
}

for dir in "$examples"/*/; do
	plan "$(basename "$dir")"
done
plan chrony --policy examples/policies/chrony.yaml
plan mirror-removed --single-node
echo "\$ ndp test examples/policies"
"$ndp" test examples/policies
