#!/usr/bin/env bash
# Builds the worker VMs' disk image: Debian bookworm from the Debian archive
# apt uses (debootstrap minbase + hack/vm/packages), customised with the files
# under hack/vm/rootfs/ and a few chroot commands, into BIN_DIR/vm-image/:
#   base.qcow2   the root file system (ext4 on the whole disk, no partitions)
#   vmlinuz      the image's kernel and initrd, for qemu's direct kernel boot
#   initrd.img   (root=/dev/vda)
#   inputs.sha256  what it was built from: when the script, the package list
#                and rootfs/ are unchanged, the image is not rebuilt
# Nothing ndp- or Kubernetes-specific is baked in: a VM gets its kubelet,
# kube-proxy and per-node files at boot from a 9p share (node-share.service).
# debootstrap's downloads are kept in BIN_DIR/vm-image-cache.
#
# Usage: hack/vm/build-image.sh [--bin BIN_DIR] [--force]
# Needs root, debootstrap, qemu-utils and e2fsprogs (mkfs.ext4 -d: no loop
# mounts). DEBIAN_MIRROR overrides the archive.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="$ROOT/bin"
FORCE=
while [[ $# -gt 0 ]]; do
	case "$1" in
	--bin) BIN="$2"; shift 2 ;;
	--force) FORCE=1; shift ;;
	*) echo "usage: $0 [--bin BIN_DIR] [--force]" >&2; exit 2 ;;
	esac
done
mkdir -p "$BIN"
BIN="$(cd "$BIN" && pwd)"
OUT="$BIN/vm-image"
CACHE="$BIN/vm-image-cache"
SUITE=bookworm
DISK_SIZE=8G # sparse: qcow2 holds only what is used (about 1 GB)

# The inputs' digest: this script, the package list, and rootfs/ (paths,
# modes, link targets and contents).
inputs() {
	cd "$HERE"
	sha256sum build-image.sh packages
	find rootfs -printf '%y %m %p %l\n' | LC_ALL=C sort
	find rootfs -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
}
stamp="$(inputs | sha256sum | cut -d' ' -f1)"
if [[ -z "$FORCE" && -f "$OUT/inputs.sha256" && -f "$OUT/base.qcow2" && -f "$OUT/vmlinuz" && -f "$OUT/initrd.img" &&
	"$(cat "$OUT/inputs.sha256")" == "$stamp" ]]; then
	echo "vm image: cached $OUT (inputs ${stamp:0:12} unchanged)"
	exit 0
fi

[[ $EUID -eq 0 ]] || { echo "vm image: needs root (debootstrap, chroot)" >&2; exit 1; }
for t in debootstrap qemu-img mkfs.ext4 chroot; do
	command -v "$t" >/dev/null || { echo "vm image: $t not found (apt-get install debootstrap qemu-utils e2fsprogs)" >&2; exit 1; }
done

# The archive apt uses: the first deb822 URIs (or one-line deb) entry for
# the suite; deb.debian.org if none.
mirror() {
	local f
	if [[ -n "${DEBIAN_MIRROR:-}" ]]; then echo "$DEBIAN_MIRROR"; return; fi
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
		[[ -f "$f" ]] || continue
		awk -v s="$SUITE" '
			/^[ \t]*$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
			$1 == "URIs:" { uri = $2 }
			$1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
			END { if (uri != "" && ok) print uri }' "$f" | head -n1 | grep . && return
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f "$f" ]] || continue
		awk -v s="$SUITE" '$1 == "deb" && $0 !~ /\[/ && $3 == s { print $2; exit }' "$f" | grep . && return
	done
	echo http://deb.debian.org/debian
}
MIRROR="$(mirror)"
PKGS="$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$HERE/packages" | paste -sd, -)"

# Everything happens in a temporary directory beside the output, moved into
# place only when complete. debootstrap mounts /proc and /sys in the tree
# while it runs: on failure they are unmounted before the tree is removed.
mkdir -p "$CACHE"
TMP="$(mktemp -d "$BIN/vm-image.tmp.XXXXXX")"
cleanup() {
	local m
	for m in $(awk -v t="$TMP/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" || true
	done
	rm -rf --one-file-system "$TMP"
}
trap cleanup EXIT
trap 'echo "vm image: interrupted" >&2; exit 130' INT TERM # the EXIT trap then cleans up
R="$TMP/rootfs"

now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
t0="$(now)"
ts="$t0"
step() { # step NAME: prints the time since the previous step
	printf 'vm image: %-12s %6ss\n' "$1" "$(since "$ts")"
	ts="$(now)"
}

LOG="$BIN/vm-image.debootstrap.log"
echo "vm image: building $SUITE from $MIRROR into $OUT (inputs ${stamp:0:12}; debootstrap's log: $LOG)"
if ! DEBIAN_FRONTEND=noninteractive debootstrap --variant=minbase --cache-dir="$CACHE" --include="$PKGS" \
	"$SUITE" "$R" "$MIRROR" >"$LOG" 2>&1; then
	echo "vm image: debootstrap failed; its log ends:" >&2
	tail -n 30 "$LOG" >&2
	[[ -f "$R/debootstrap/debootstrap.log" ]] && tail -n 30 "$R/debootstrap/debootstrap.log" >&2
	exit 1
fi
step debootstrap

# Customise: the static files, then what only a command can do.
cp -a "$HERE/rootfs/." "$R/"
# No identity baked in: an empty machine-id makes systemd derive one at first
# boot (from qemu's -uuid in a VM) and commit it; the hostname comes from
# systemd.hostname= on the kernel command line.
: >"$R/etc/machine-id"
[[ -L "$R/var/lib/dbus/machine-id" ]] || rm -f "$R/var/lib/dbus/machine-id"
rm -f "$R/etc/hostname"
# A guest contacts nothing: no NTP pool, no apt or maintenance timers.
sed -i 's/^pool /#pool /' "$R/etc/chrony/chrony.conf"
# chronyd reads /etc/chrony.conf, as on RHEL CoreOS, where MachineConfigs
# write it: Debian's file moved there.
mv "$R/etc/chrony/chrony.conf" "$R/etc/chrony.conf"
sed -i 's|^DAEMON_OPTS=.*|DAEMON_OPTS="-F 1 -f /etc/chrony.conf"|' "$R/etc/default/chrony"
grep -q 'DAEMON_OPTS="-F 1 -f /etc/chrony.conf"' "$R/etc/default/chrony"
# No Debian archive either: apt's sources are the node's own (the apt
# scenario's MachineConfig writes one), so an apt-get update asks nothing
# unreachable.
: >"$R/etc/apt/sources.list"
# The journal survives reboots (journalctl --list-boots tells each boot).
mkdir -p "$R/var/log/journal"
in_root() { chroot "$R" "$@"; }
in_root systemctl mask --quiet apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer dpkg-db-backup.timer \
	systemd-networkd-wait-online.service
# Boot work a worker VM does not need (no display, no LVM or loop devices,
# no EFI, no console login but the serial one): time under an emulated CPU.
in_root systemctl mask --quiet modprobe@drm.service modprobe@dm_mod.service modprobe@loop.service modprobe@efi_pstore.service
in_root systemctl disable --quiet getty@tty1.service e2scrub_reap.service
in_root systemctl enable --quiet systemd-networkd.service containerd.service serial-getty@ttyS0.service \
	node-share.service qemu-guest-agent.service kubelet.service kube-proxy.service
# The small initrd of rootfs/etc/initramfs-tools.
in_root update-initramfs -u -k all >"$TMP/update-initramfs.log" 2>&1 || { cat "$TMP/update-initramfs.log" >&2; exit 1; }
# What a node does not need, and the image does not need to carry.
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/* "$R"/var/log/*.log "$R"/var/log/apt/*
step customise

cp -L "$R/vmlinuz" "$TMP/vmlinuz"
cp -L "$R/initrd.img" "$TMP/initrd.img"
truncate -s "$DISK_SIZE" "$TMP/base.raw"
mkfs.ext4 -q -F -L root -d "$R" "$TMP/base.raw"
step mkfs
qemu-img convert -O qcow2 "$TMP/base.raw" "$TMP/base.qcow2"
rm -f "$TMP/base.raw"
echo "$stamp" >"$TMP/inputs.sha256"
step qcow2

# Into place, file by file (each rename is atomic; a running VM keeps the
# base it opened), the stamp last: an interrupted install is rebuilt.
mkdir -p "$OUT"
rm -f "$OUT/inputs.sha256"
for f in vmlinuz initrd.img base.qcow2 inputs.sha256; do
	mv -f "$TMP/$f" "$OUT/$f"
done
step install
echo "vm image: done in $(since "$t0")s: $(cd "$OUT" && du -h --apparent-size base.qcow2 vmlinuz initrd.img | awk '{ printf "%s %s  ", $2, $1 }')"
