#!/usr/bin/env bash
# The quick start's main command (make local-cluster): a local cluster on
# this machine — etcd and kube-apiserver from bin/, ndp-controller, three
# simulated nodes each with a real systemd user manager and ndp-daemon — a
# chrony change previewed, planned and rolled out node by node, checked,
# and everything stopped again. Needs root (systemd runs in private mount
# namespaces) and the binaries `make build control-plane` puts in bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/localcluster "$@"
