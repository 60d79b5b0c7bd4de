#!/usr/bin/env bash
# The first thing make test, make cluster and make local-cluster run, before
# anything builds: checks that this machine has the commands and files those
# goals need (from the Debian packages named below) and that it runs as root.
# As root on Debian, it installs what is missing with apt-get, saying what and
# why. Elsewhere (not root, or not Debian) it stops at once with one message
# naming the packages and the command that installs them.
#
# Usage: hack/packages.sh PROFILE...   (test, cluster, local-cluster; several
# are checked, and installed, together)
# NDP_CLUSTER_VMS=0 (make cluster VMS=0): the cluster without its worker VMs,
# so without qemu, debootstrap and socat.
#
# Only bash builtins and apt-get run here, so its test (hack/packages) runs it
# with a PATH of stubs. For that test: NDP_PACKAGES_FS is put in front of the
# files checked (/lib/systemd/systemd, /usr/lib/cni/bridge,
# /etc/debian_version) and NDP_PACKAGES_EUID stands in for the user id.
set -euo pipefail

FS="${NDP_PACKAGES_FS:-}"
uid="${NDP_PACKAGES_EUID:-$EUID}"

usage() {
	echo "usage: $0 PROFILE... (test, cluster, local-cluster)" >&2
	exit 2
}
[[ $# -gt 0 ]] || usage

# What each profile needs: "cmd NAME" (on PATH) or "file PATH" (under FS),
# the Debian package that has it, and why.
reqs=()
req() { reqs+=("$1|$2|$3|$4"); }
base() {
	req cmd make make "the build"
	req cmd git git "make's version stamp and lint"
	req file /lib/systemd/systemd systemd "real systemd managers for the node daemon"
	req cmd systemctl systemd "real systemd managers for the node daemon"
	req cmd unshare util-linux "systemd managers in private mount namespaces"
}
goals=()
for p in "$@"; do
	case "$p" in
	test)
		goals+=("make test")
		base
		# test/framework/vm's test starts a real qemu (it skips without one).
		req cmd qemu-system-x86_64 qemu-system-x86 "the worker VM test"
		req cmd qemu-img qemu-utils "the worker VM test's disk"
		req cmd gcc gcc "the race detector (cgo)"
		# rolloutgates' test starts its own on loopback ports (make test sets
		# NDP_REQUIRE_PROMETHEUS, so it fails rather than skips without them).
		req cmd prometheus prometheus "the rollout gates' test, a real Prometheus"
		req cmd prometheus-alertmanager prometheus-alertmanager "the rollout gates' and node silences' tests, a real Alertmanager"
		req cmd curl curl "the GitLab CI example's merge request note, posted to a loopback API"
		;;
	local-cluster)
		goals+=("make local-cluster")
		base
		;;
	cluster)
		base
		req cmd containerd containerd "the node's container runtime"
		req cmd containerd-shim-runc-v2 containerd "the node's container runtime"
		req cmd ctr containerd "the node's container runtime"
		req cmd runc runc "the node's OCI runtime"
		req file /usr/lib/cni/bridge containernetworking-plugins "the pod network"
		req cmd iptables iptables "kube-proxy's rules"
		req cmd ip iproute2 "the node namespace's veth"
		req cmd nsenter util-linux "commands in the node's namespaces"
		if [[ "${NDP_CLUSTER_VMS:-}" == 0 ]]; then
			goals+=("make cluster VMS=0")
		else
			goals+=("make cluster")
			req cmd qemu-system-x86_64 qemu-system-x86 "the worker VMs"
			req cmd qemu-img qemu-utils "the worker VMs' disks"
			req cmd debootstrap debootstrap "the worker VMs' Debian image"
			req cmd mkfs.ext4 e2fsprogs "the worker VMs' root file system"
			req cmd socat socat "the worker VMs' forwarded ports"
			req cmd prometheus prometheus "the rollout scenario's alert gate"
			req cmd promtool prometheus "the rollout scenario's alert checks"
			req cmd prometheus-alertmanager prometheus-alertmanager "the rollout scenario's alert gate"
			req cmd prometheus-node-exporter prometheus-node-exporter "the rollout scenario's alert (a textfile metric)"
		fi
		;;
	*) usage ;;
	esac
done
what="$(IFS=,; echo "${goals[*]}")"
what="${what//,/, }"

# missing: the packages with something missing, in the order first needed;
# names[pkg] and uses[pkg]: what of it is missing, and what that is for.
declare -A names uses
check() {
	missing=()
	names=()
	uses=()
	local r kind name pkg reason
	for r in "${reqs[@]}"; do
		IFS='|' read -r kind name pkg reason <<<"$r"
		if [[ $kind == cmd ]]; then
			command -v "$name" >/dev/null && continue
		else
			[[ -e "$FS$name" ]] && continue
		fi
		if [[ -z "${names[$pkg]:-}" ]]; then
			missing+=("$pkg")
			names[$pkg]="$name"
			uses[$pkg]="$reason"
			continue
		fi
		[[ ", ${names[$pkg]}, " == *", $name, "* ]] || names[$pkg]+=", $name"
		[[ "; ${uses[$pkg]}; " == *"; $reason; "* ]] || uses[$pkg]+="; $reason"
	done
}
check

listing() {
	local p
	for p in "${missing[@]}"; do
		echo "  $p: ${names[$p]} (${uses[$p]})"
	done
}
debian=
[[ -f "$FS/etc/debian_version" ]] && command -v apt-get >/dev/null && debian=1
install_cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]:-}"
because_root="it creates namespaces and cgroups and runs systemd in private mount namespaces"

if ((${#missing[@]} == 0)); then
	if [[ $uid != 0 ]]; then
		echo "packages ($what): needs root ($because_root): run it as root" >&2
		exit 1
	fi
	echo "packages ($what): everything needed is installed"
	exit 0
fi

if [[ $uid != 0 || -z $debian ]]; then
	{
		echo "packages ($what): these Debian packages are missing: ${missing[*]}"
		listing
		if [[ -z $debian ]]; then
			echo "This is not Debian (no /etc/debian_version or apt-get): install your system's equivalents of those packages."
		else
			echo "Run it as root (it needs root: $because_root) and it installs them itself; or install them as root:"
			echo "  $install_cmd"
		fi
	} >&2
	exit 1
fi

echo "packages ($what): these Debian packages are missing; installing them with apt-get:"
listing
installed=("${missing[@]}")
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
check
if ((${#missing[@]})); then
	echo "packages ($what): still missing after apt-get install (installed, but not on PATH=$PATH?):" >&2
	listing >&2
	exit 1
fi
echo "packages ($what): installed ${installed[*]}; everything needed is installed"
