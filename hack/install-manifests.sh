#!/usr/bin/env bash
# Renders the install manifests with the image pinned by digest:
# dist/install.yaml (the kustomize base, manifests/: the executor, for
# Kubernetes without the Machine Config Operator) and
# dist/install-openshift.yaml (overlays/openshift: the advisor beside the
# MCO) and dist/install-openshift-mco-entries.yaml (overlays/openshift-mco-entries:
# the advisor whose policies also drive the MCO's own node disruption
# policy), with kubectl's built-in kustomize.
#
# Usage: [DIST=DIR] hack/install-manifests.sh IMAGE DIGEST [KUBECTL]
#   IMAGE   registry/repository the image is pushed to (ghcr.io/ndp-dev/ndp)
#   DIGEST  sha256:... of the image (make image prints it)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
image="$1" digest="$2" kubectl="${3:-$ROOT/bin/kubectl}"
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "install-manifests: '$digest' is not an image digest" >&2; exit 1; }
[[ -n "$image" && "$image" != *@* ]] || { echo "install-manifests: IMAGE '$image' must name a repository, without a tag or digest" >&2; exit 1; }
last="${image##*/}"
if [[ "$last" == *:* ]]; then # a tag (not a registry's port): the digest pins the image
	echo "install-manifests: the tag of '$image' is dropped: the manifests pin the digest" >&2
	image="${image%:*}"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dist="${DIST:-$ROOT/dist}"
mkdir -p "$dist"
for variant in base openshift openshift-mco-entries; do
	case "$variant" in
	base) src="$ROOT/manifests" out="$dist/install.yaml" ;;
	openshift) src="$ROOT/overlays/openshift" out="$dist/install-openshift.yaml" ;;
	openshift-mco-entries) src="$ROOT/overlays/openshift-mco-entries" out="$dist/install-openshift-mco-entries.yaml" ;;
	esac
	mkdir -p "$work/$variant"
	# An overlay of one's own, outside the repository: kustomize's image
	# transformer sets the digest, nothing edits YAML by hand.
	cat >"$work/$variant/kustomization.yaml" <<EOK
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$work/$variant" "$src")
images:
- name: ghcr.io/ndp-dev/ndp
  newName: $image
  digest: $digest
EOK
	{
		echo "# ndp $(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo dev): kubectl apply -f $(basename "$out")"
		echo "# Rendered by make install-manifests from ${src#"$ROOT"/}; image $image@$digest"
		"$kubectl" kustomize "$work/$variant"
	} >"$out.tmp"
	grep -q "image: $image@$digest" "$out.tmp" || { echo "install-manifests: $out does not name $image@$digest" >&2; exit 1; }
	mv "$out.tmp" "$out"
	echo "install-manifests: $out ($(grep -c '^kind:' "$out") objects, image $image@$digest)"
done
