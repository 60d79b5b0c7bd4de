// Package scale measures a rollout at scale (docs/design.md#testing, issue 11 part 3):
// 1,000 Node objects in 5 MachineConfigPools on a real kube-apiserver and
// etcd, ndp-controller as a process of its own, and 1,000 simulated nodes
// running the real daemon code (daemon.Daemon: its Sync, Drainer and
// Status) in one process, on simulated hosts (internal/simhost). Three
// changes roll out one after the other — planned None, Restart and Reboot —
// under maxUnavailable 10%, and the run reports time against the ideal,
// the peak of unavailable nodes per pool seen by a watch, API requests per
// node and the controller's CPU and memory.
//
// The test is behind the build tag scale (`go test ./...` skips it):
//
//	KUBEBUILDER_ASSETS=$PWD/bin go test -tags scale -run TestScale -v -count 1 -timeout 60m ./test/scale/
//
// NDP_SCALE_NODES and NDP_SCALE_POOLS choose the size (default 1000 and 5);
// see config in scale_test.go for the rest.
//
// TestScaleMCO (make scale-mco, mco_test.go) measures ndp beside the
// Machine Config Operator at a real cluster's size: 500 rendered
// MachineConfigs of 150 KB to 1.2 MB built from ../shared/mco-ref's real
// ones, the MCO's controllers (mcc-ref) and ndp-controller holding them,
// their peak memory, and preview latency against a no-op webhook; see
// mcoConfig for its settings.
package scale
