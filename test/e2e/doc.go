// Package e2e is make cluster: ndp installed from its install manifests on
// a real one-node Kubernetes cluster on this machine and its worker VMs
// (test/framework brings them up), used through kubectl only as an
// administrator would, each outcome checked on the nodes themselves; then
// everything stopped and checked gone.
//
// TestCluster brings the cluster up once and runs the scenarios as its
// subtests, in order: each stands on what the earlier ones left. It skips
// unless NDP_E2E=1, which make cluster sets: plain go test ./... (make
// test) starts no cluster. The run prints each step as a person would
// watch it, and at the end the summary of what each scenario checked and
// found, and each step's time (a failure too, last: CI shows a log's
// tail).
package e2e
