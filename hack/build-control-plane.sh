#!/usr/bin/env bash
# Builds Kubernetes binaries from the Go module proxy into BIN_DIR (default
# <repo>/bin): by default the test control plane (etcd, kube-apiserver,
# kubectl) for envtest via KUBEBUILDER_ASSETS=BIN_DIR; named ones otherwise,
# e.g. the real node's kubelet, kube-controller-manager, kube-scheduler and
# kube-proxy (make cluster, test/framework). Each comes from its own module under
# hack/controlplane/ so its dependencies stay out of the root go.mod.
# A binary that already reports the version pinned in its go.mod is skipped;
# bumping the pin rebuilds it. Delete a binary to force a rebuild.
#
# Usage: hack/build-control-plane.sh [--bin BIN_DIR] [NAME...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/hack/controlplane"
BIN="$ROOT/bin"
if [[ "${1:-}" == --bin ]]; then
	BIN="$2"
	shift 2
fi
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(etcd kube-apiserver kubectl)
mkdir -p "$BIN"
BIN="$(cd "$BIN" && pwd)"

# Version of module $2 as required in $1/go.mod.
modver() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$SRC/$1/go.mod"
}

# build NAME WANT LDFLAGS VERSION-CMD...: skip if VERSION-CMD's output
# contains WANT, else build hack/controlplane/NAME into $BIN/NAME.
build() {
	local name="$1" want="$2" ldflags="$3"
	shift 3
	local out="$BIN/$name"
	# Capture first: grep -q closing the pipe early would trip pipefail.
	if [[ -x "$out" ]] && [[ "$("$out" "$@" 2>/dev/null || true)" == *"$want"* ]]; then
		echo "control plane: $name up to date ($want)"
		return
	fi
	echo "control plane: building $name ($want) into $out ..."
	local start=$SECONDS
	# Build to a temp name and rename, so an interrupted build never leaves a
	# binary that would pass the version check.
	# -buildvcs=false: this repo's git state says nothing about these binaries
	# (and VCS stamping fails on some CI checkouts); -s -w: faster link.
	(cd "$SRC/$name" && go build -trimpath -buildvcs=false -ldflags "-s -w $ldflags" -o "$out.tmp" .)
	mv -f "$out.tmp" "$out"
	echo "control plane: built $name in $((SECONDS - start))s"
}

# Stamps the k8s version variables that `--version`, `kubectl version` and
# envtest read (they default to v0.0.0-master otherwise).
k8sflags() {
	local v="$1" major minor
	major="${v#v}" && major="${major%%.*}"
	minor="${v#v*.}" && minor="${minor%%.*}"
	local f=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		f+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	echo "$f"
}

total=$SECONDS
for name in "${names[@]}"; do
	case "$name" in
	etcd)
		v="$(modver etcd go.etcd.io/etcd/server/v3)"
		want="etcd Version: ${v#v}" flags="" cmd=(--version)
		;;
	kubectl)
		v="$(modver kubectl k8s.io/kubectl)"
		v="v1.${v#v0.}" # staging v0.X.Y is released with Kubernetes v1.X.Y
		want="Client Version: $v" flags="$(k8sflags "$v")" cmd=(version --client)
		;;
	kube-apiserver | kubelet | kube-controller-manager | kube-scheduler | kube-proxy)
		v="$(modver "$name" k8s.io/kubernetes)"
		want="Kubernetes $v" flags="$(k8sflags "$v")" cmd=(--version)
		;;
	*)
		echo "control plane: unknown binary '$name'" >&2
		exit 1
		;;
	esac
	[[ "$v" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "control plane: bad pinned version '$v' in $SRC/$name/go.mod" >&2; exit 1; }
	build "$name" "$want" "$flags" "${cmd[@]}"
done
echo "control plane: ${names[*]} ready in $BIN ($((SECONDS - total))s)"
