# ndp: the node disruption planner.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN ?= $(CURDIR)/bin
GO ?= go
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(BIN)/controller-gen
GO_TEST_FLAGS ?=

FUZZTIME ?= 15s
FUZZTIME_LONG ?= 5m
FUZZMINIMIZETIME ?= 100x
RUNS ?= 3
BENCHCOUNT ?= 3
ADMISSION_LOAD ?= 20s

.PHONY: image image-push install-manifests node-binaries cluster cluster-under-load vm-image test-vm
.PHONY: all packages build test test-go test-rego test-fuzz fuzz faults scale scale-mco test-under-load control-plane bench generate verify lint fmt vet demo local-cluster clean

all: build

# The Debian packages the goals asked for need (make test, make cluster, make local-cluster; several at once are checked,
# and installed, together). hack/packages.sh checks them before anything builds: as root on Debian it installs what is
# missing with apt-get, saying what and why; else it stops within seconds, naming the packages and how to install them.
PACKAGE_PROFILES ?= $(sort $(patsubst test-go,test,$(filter test test-go cluster local-cluster,$(MAKECMDGOALS))))
# VMS: how many worker VMs make cluster boots: 2 by default, the full scenario; VMS=0 asks for the smaller one without
# them (and without qemu, debootstrap and socat). NDP_CLUSTER_VMS in the environment sets it too.
VMS ?= $(or $(NDP_CLUSTER_VMS),2)
export NDP_CLUSTER_VMS := $(VMS)
# SCENARIOS: for development, make cluster runs only these of the worker-VM scenarios (comma-separated: leader, preview,
# chrony, kubelet, apt, rollout, reboot or os-update, upgrade) after the pool's first rollout; empty: all. NDP_CLUSTER_SCENARIOS too.
SCENARIOS ?= $(NDP_CLUSTER_SCENARIOS)
export NDP_CLUSTER_SCENARIOS := $(SCENARIOS)
# KEEP=1: make cluster leaves the cluster running after a run that passed, and says how to reach and stop it.
# NDP_CLUSTER_KEEP=1 in the environment too.
KEEP ?= $(NDP_CLUSTER_KEEP)

## packages: checks, and as root on Debian installs, what the goals given with it need (make test, cluster and
## local-cluster run it first; alone: make packages PACKAGE_PROFILES="test cluster local-cluster")
packages:
	@$(if $(strip $(PACKAGE_PROFILES)),hack/packages.sh $(PACKAGE_PROFILES),true)

# Under make -j too, nothing builds before the packages are checked.
build image control-plane node-binaries vm-image test-fuzz: | packages

## build: the ndp CLI (also installed as kubectl-ndp, so `kubectl ndp` / `oc ndp` work), ndp-controller and ndp-daemon
build:
	$(GO) build -o $(BIN)/ndp ./cmd/ndp
	ln -sf ndp $(BIN)/kubectl-ndp
	$(GO) build -o $(BIN)/ndp-controller ./cmd/ndp-controller
	$(GO) build -o $(BIN)/ndp-daemon ./cmd/ndp-daemon

# The image: where it is pushed, and the version stamped into ndp-controller (the ClusterOperator's).
IMAGE ?= ghcr.io/ndp-dev/ndp
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Static, stripped binaries: no libc to ship, no symbol tables or DWARF (-s -w), no paths of this
# machine (-trimpath), no VCS stamp (the version is given): the same commit gives the same bytes.
IMAGE_LDFLAGS := -s -w -buildid= -X github.com/ndp-dev/ndp/controllers/executor.Version=$(VERSION)

## image: the one ndp image (ndp, ndp-controller, ndp-daemon; static binaries, no base image), built
## reproducibly with go-containerregistry into the OCI layout bin/ndp-image; prints its digest
image:
	@mkdir -p $(BIN)/image-root
	for c in ndp ndp-controller ndp-daemon; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -buildvcs=false -ldflags '$(IMAGE_LDFLAGS)' -o $(BIN)/image-root/$$c ./cmd/$$c; done
	$(GO) run ./hack/image build --out $(BIN)/ndp-image --name $(IMAGE):$(VERSION) --user 65532:65532 --entrypoint /ndp \
		--label org.opencontainers.image.source=https://github.com/ndp-dev/ndp --label org.opencontainers.image.version=$(VERSION) \
		--file /ndp=$(BIN)/image-root/ndp --file /ndp-controller=$(BIN)/image-root/ndp-controller --file /ndp-daemon=$(BIN)/image-root/ndp-daemon \
		> $(BIN)/ndp-image.digest
	@echo "ndp image $$(cat $(BIN)/ndp-image.digest)"

## image-push: push the image to IMAGE (e.g. make image-push IMAGE=registry.example.com/ndp); then make install-manifests
image-push: image
	$(GO) run ./hack/image push --layout $(BIN)/ndp-image --to $(IMAGE):$(VERSION)

## install-manifests: dist/install.yaml (and dist/install-openshift.yaml, dist/install-openshift-mco-entries.yaml) with IMAGE
## pinned by the digest of make image
install-manifests: image control-plane
	hack/install-manifests.sh $(IMAGE) $$(cat $(BIN)/ndp-image.digest) $(BIN)/kubectl

## test: Go tests (the differential test included), the Rego tests of the built-in and example
## policies through `ndp test`, and a short run of the differential fuzz target
test: test-go test-rego test-fuzz

# The cluster tests (test/cluster, test/node) run envtest against the real binaries in $(BIN);
# test/node also runs systemd user managers (root, /lib/systemd/systemd, unshare).
# Every package runs under the race detector (needs cgo: gcc), the suites that run ndp's controllers and webhooks
# in the test process included (test/node builds the ndp-daemon it runs with -race too). Alone on 2 cores, without
# and with -race: test/cluster 135 s and 166 s, test/node 134 and 147, test/docs 23 and 24, test/mco 236 and 435
# (TestDiffAgreesWithTheMCO's clusterdiff, 133 and 386). Except the packages matching NORACE_PKGS:
# - test/e2e, test/framework(/vm): suites that start API servers, daemons, systemd
#   managers or VMs; much of what they test runs in other, uninstrumented processes, and -race's slowdown on top of
#   theirs would cost more than the CI budget allows;
# - test/scale: its tests build only with -tags scale (make scale, which times ndp-controller run as a process);
# - mcorules: pure functions, but its agreement test replays 10,400 recorded MCO verdicts: 2 CPU-minutes without
#   -race, not done after 14 with it (stopped by a 40-minute timeout on a loaded 2-core machine).
# The hostile-policy tests check which resource limit stops a policy; -race's slowdown trips the time limit first,
# so they skip under -race and run here without it; so does TestDiffAgreesWithTheMCO, whose clusterdiff computes
# alone (no concurrency to check) and took 386 s of the race line's longest package.
NORACE_PKGS := /test/scale$$|/test/(e2e|framework(/vm)?)$$|/mcorules$$
# TEST_PACKAGES_AT_ONCE: go test's -p (its default is the number of cores, 2 here). The long suites (test/mco,
# test/cluster, test/node: 3 to 7 minutes each) mostly wait on the API servers, daemons and systemd managers they
# start: two at a time, make test used about one core over its 13 minutes. Four at a time, they overlap.
TEST_PACKAGES_AT_ONCE ?= 4
# NDP_REQUIRE_PROMETHEUS: rolloutgates', alertsilence's and the silence controller's tests (and test/framework's check of its monitoring configs with
# promtool and amtool) fails, not skips, without Debian's prometheus and prometheus-alertmanager
# (hack/packages.sh test installs them). -timeout: test/mco under -race takes 7 minutes alone, more beside the
# other packages, and go test's default stops a package at 10.
test-go: packages control-plane
	NDP_REQUIRE_PROMETHEUS=1 KUBEBUILDER_ASSETS=$(BIN) CGO_ENABLED=1 $(GO) test -p $(TEST_PACKAGES_AT_ONCE) -timeout 30m $(GO_TEST_FLAGS) -race $$($(GO) list ./... | grep -v -E '$(NORACE_PKGS)')
	NDP_REQUIRE_PROMETHEUS=1 KUBEBUILDER_ASSETS=$(BIN) $(GO) test -p $(TEST_PACKAGES_AT_ONCE) $(GO_TEST_FLAGS) $$($(GO) list ./... | grep -E '$(NORACE_PKGS)')
	$(GO) test $(GO_TEST_FLAGS) -run '^TestHostile' ./planner/engine/ ./policyset/
	NDP_REQUIRE_PROMETHEUS=1 KUBEBUILDER_ASSETS=$(BIN) $(GO) test $(GO_TEST_FLAGS) -run '^TestDiffAgreesWithTheMCO$$' ./test/mco/

## control-plane: etcd, kube-apiserver and kubectl for the cluster tests, built from the Go module
## proxy into bin/ (about 13 minutes cold on 2 cores with downloads; skipped when the pinned versions are there)
control-plane:
	hack/build-control-plane.sh --bin $(BIN)

# The built-in policies are embedded in the binary, so `ndp test` runs their tests with the examples'.
test-rego: build
	$(BIN)/ndp test -v examples/policies

test-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDifferentialDefaults$$' -fuzztime $(FUZZTIME) ./planner/

## fuzz: every fuzz target for FUZZTIME_LONG each, one after another: MachineConfig/Ignition diffing and planning,
## registries.conf parsing, NodeDisruptionPolicy decoding, the OS tools' output (osupdate), the daemon's plan and journal decoding (its Sync on a
## temporary host root), Ignition parsing, the differential test and the MCO agreement (mcorules.Decide against
## ../shared/mco-ref/mco-decide on a real config and a mutation sequence; skipped without the tool). Seeds and kept crashers are in <pkg>/testdata/fuzz
## (plain `go test` replays them); what a run finds is kept in the Go cache. FUZZMINIMIZETIME bounds the minimizing
## of each new input (the daemon's target is slow: at Go's default of 60s, minimizing would take most of the run)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDiff$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./planner/
	$(GO) test -run '^$$' -fuzz '^FuzzRegistriesConf$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./registries/
	$(GO) test -run '^$$' -fuzz '^FuzzNodeDisruptionPolicy$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./planner/loader/
	$(GO) test -run '^$$' -fuzz '^FuzzDaemonPlan$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./daemon/
	$(GO) test -run '^$$' -fuzz '^FuzzParseIgnition$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./machineconfig/
	$(GO) test -run '^$$' -fuzz '^FuzzParsers$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./osupdate/
	$(GO) test -run '^$$' -fuzz '^FuzzDifferentialDefaults$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./planner/
	$(GO) test -run '^$$' -fuzz '^FuzzMCOAgreement$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./mco/mcorules/
	$(GO) test -run '^$$' -fuzz '^FuzzMCOExport$$' -fuzztime $(FUZZTIME_LONG) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 ./mco/mcorules/

## mco-agreement: the MCO agreement test's recording (mco/mcorules/testdata/agreement/): every generated case (10,400 seeded
## mutations of the real rendered configs, MachineConfiguration policies, real pairs) run live through
## ../shared/mco-ref/mco-decide, the MCO daemon's own code (about 15 minutes on 2 cores); prints per-class agreement of
## mcorules.Decide (after) and of ndp's planner with the imported MachineConfiguration (before). `make test` checks the
## recording and re-runs a sample live; re-record after changing the generator (mco/mcorules/mutate_test.go). Verdicts are
## also kept by input digest in bin/mco-agreement.resume, so an interrupted run resumes (delete it when mco-decide
## changes); MCO_AGREEMENT_WORKERS sets the cases run at once (default: GOMAXPROCS)
MCO_AGREEMENT_WORKERS ?= 0
.PHONY: mco-agreement
mco-agreement:
	@mkdir -p $(BIN)
	$(GO) test -run '^TestMCOAgreement$$' -count 1 -timeout 180m -v ./mco/mcorules/ -args -update -agreement.before \
		-agreement.workers $(MCO_AGREEMENT_WORKERS) -agreement.resume $(BIN)/mco-agreement.resume 2>&1 | \
		grep -v -E '^=== RUN'

## mco-export-agreement: ndp's entries in the MCO's own policy (mcoentries) against the MCO's own code: 10,000 seeded
## mutations of the real rendered configs (files, units, drop-ins, SSH, registries.conf, kubelet.conf and CRI-O
## drop-in contents) with random NodeDisruptionPolicy sets (declarative, Rego, per-pool, bundles); each case's export
## (static + per-update entries) validated by the MCO API's schema and CEL rules and judged by
## ../shared/mco-ref/mco-decide on every case (and mcorules.Decide): the MCO does ndp's plan where ForUpdate says so,
## never less than ndp's plan, nor, where no user policy claims a change, less than its own default. Prints the cases
## per class and the violations. About 30 minutes on 2 busy cores, most of it in mco-decide (14,844 runs); plain
## `go test` runs 2,000 cases in-process, 60 of them live, in 25-45 s. MCO_EXPORT_WORKERS sets the cases run at once
## (default: GOMAXPROCS)
MCO_EXPORT_WORKERS ?= 0
.PHONY: mco-export-agreement
mco-export-agreement:
	$(GO) test -run '^TestMCOExportAgreement$$' -count 1 -timeout 180m -v ./mco/mcorules/ -args -export.cases 10000 -export.live-all \
		-export.workers $(MCO_EXPORT_WORKERS)

## diff-agreement: clusterdiff.Diff (ndp diff) against the MCO's own controllers and daemon code: each of the five real
## clusters of ../shared/mco-ref/realconfigs on its own API server beside mcc-ref (without its template controller), 11
## cumulative change sets (testdata/diff: MachineConfigs, KubeletConfigs, a ContainerRuntimeConfig, IDMS, ITMS, ICSP,
## image.config, a MachineConfiguration policy, deletions, a mix, a no-op) predicted from the live cluster and from an
## `oc get -o yaml` snapshot, then applied: each pool's rendered config must be the predicted one and mco-decide's
## decision the reported plan. Prints a table of change set x cluster. The clusters run at once (DIFF_AGREEMENT_PARALLEL):
## 3 to 3.5 minutes on 2 busy cores (about 5 with two at a time); `make test` runs 4.16.0-compact alone (about 1.5 minutes)
DIFF_AGREEMENT_PARALLEL ?= 5
.PHONY: diff-agreement
diff-agreement: control-plane
	NDP_DIFF_ALL_CLUSTERS=1 KUBEBUILDER_ASSETS=$(BIN) $(GO) test -run '^TestDiffAgreesWithTheMCO$$' -count 1 -timeout 30m -v \
		-parallel $(DIFF_AGREEMENT_PARALLEL) ./test/mco/

## bench: plan time of the Rego planner vs the plain-Go oracle, with their ratio, and vs the floor (a
## plain encoding/json decode of both documents into the Ignition types), with plan ÷ floor; plan time with
## file contents (kept, built for Rego, read by a policy) vs without them, same run, target 1.2×; plan and compile
## time with 1, 100 and 1,000 declarative and Rego policies, with their ratios; the time for the
## controllers to re-plan 50 pools x 3 source configs after a policy change, on a real API server; and
## admission latency (p50/p99, errors, req/s) of 50 clients sending 200-file MachineConfig dry-runs for
## ADMISSION_LOAD, to the webhook alone, through the API server, and with every config different; and the
## rendering of a pool of 10 MachineConfigs (render.Merge, Ignition's merge); and ndp diff of a 10-object change
## set against a real cluster's 4.3 MB snapshot, as a process and in process, each beside its floor (decoding it)
bench: control-plane
	$(GO) test -run '^$$' -bench 'BenchmarkPlan|BenchmarkFloor|BenchmarkContent' -benchmem -count $(BENCHCOUNT) ./planner/ | tee $(BIN)/bench.txt
	$(GO) run ./hack/benchtable < $(BIN)/bench.txt
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -run '^$$' -bench 'BenchmarkReplanAfterPolicyChange' -benchtime 3x ./test/cluster/ 2>/dev/null | grep -E '^(Benchmark|ok|FAIL)'
	KUBEBUILDER_ASSETS=$(BIN) NDP_ADMISSION_LOAD=$(ADMISSION_LOAD) $(GO) test -run '^$$' -bench 'BenchmarkAdmissionUnderLoad' -benchtime 1x ./test/cluster/ 2>/dev/null | grep -E '^(Benchmark|ok|FAIL)|first error'
	$(GO) test -run '^$$' -bench 'BenchmarkPolicyScaling' -benchtime 10x -benchmem -count $(BENCHCOUNT) ./planner/ | tee $(BIN)/bench-scaling.txt && $(GO) run ./hack/benchtable < $(BIN)/bench-scaling.txt
	$(GO) test -run '^$$' -bench 'BenchmarkMerge' -benchmem -count $(BENCHCOUNT) ./render/ | grep -E '^Benchmark'
	$(GO) test -run '^$$' -bench 'BenchmarkDiff' -benchtime 5x -count $(BENCHCOUNT) ./clusterdiff/ | grep -E '^Benchmark'


## faults: the reliability campaign of docs/reliability.md, on real processes: 100 SIGKILLs of ndp-daemon at random
## steps of random plans; 20 kills of the leading ndp-controller of two, API server restarts and a daemon cut off for
## a minute, mid-rollout; hostile policies against ndp-controller, with its peak memory. Prints each trial's outcome
## and "N passed, M failed"; the whole log is in bin/faults.log. NDP_FAULTS_SEED=<n> replays a run.
faults: control-plane
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags faults -run '^TestFaults' -v -count 1 -timeout 90m ./test/node/ 2>&1 | tee $(BIN)/faults.log | \
		grep --line-buffered -E '^(faults:|    [a-z_]+_test\.go:[0-9]+:|--- FAIL|FAIL|ok)'

## test-under-load: make test three times in a row (RUNS=n) while busy loops keep every core busy
test-under-load: control-plane
	RUNS=$(RUNS) hack/test-under-load.sh

## local-cluster: the quick start: a local control plane, ndp-controller and three node daemons with
## real systemd; a chrony change previewed, planned and rolled out node by node; then everything stopped
local-cluster: packages build control-plane
	hack/local-cluster.sh

NODE_BINARIES := kubelet kube-controller-manager kube-scheduler kube-proxy

## node-binaries: kubelet, kube-controller-manager, kube-scheduler and kube-proxy built from the Go module proxy into
## bin/ (about 5 minutes cold after control-plane, seconds when up to date)
node-binaries:
	hack/build-control-plane.sh --bin $(BIN) $(NODE_BINARIES)

## cluster: the quick start: ndp installed from its install manifests (image by digest, from a registry on loopback)
## on a real one-node Kubernetes cluster on this machine (kubelet, containerd, runc, kube-proxy, kube-controller-manager,
## kube-scheduler in namespaces of their own) and VMS worker VMs (default 2; VMS=0: none, the smaller scenario), used
## through kubectl, then everything stopped (KEEP=1 leaves it running). Needs root; installs the Debian packages it needs
## first (make packages). The scenarios are the Go test test/e2e (TestCluster) over test/framework; NDP_E2E=1 runs it,
## uncached; the timeout leaves the waits, which follow progress, room (the test stops everything 10 minutes before it)
cluster: packages build image control-plane node-binaries $(if $(filter-out 0,$(VMS)),vm-image)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/pause ./hack/pause
	CGO_ENABLED=0 $(GO) build -o $(BIN)/rpm-ostree-standin ./hack/rpm-ostree-standin
	$(GO) build -o $(BIN)/image-tool ./hack/image
	NDP_E2E=1 NDP_CLUSTER_KEEP=$(KEEP) $(GO) test ./test/e2e -run '^TestCluster$$' -v -count=1 -timeout 3h

## cluster-under-load: make cluster while busy loops keep every core busy (as test-under-load); prints how long it took.
## The log: bin/cluster-under-load.log
cluster-under-load:
	hack/cluster-under-load.sh

## vm-image: the worker VMs' disk image (Debian bookworm by debootstrap from the Debian archive apt uses, kernel and
## initrd for direct boot) into bin/vm-image; about 3 minutes cold, under a second when hack/vm/ is unchanged.
## Needs root, debootstrap, qemu-utils and e2fsprogs
vm-image:
	hack/vm/build-image.sh --bin $(BIN)

## test-vm: boots a worker VM from bin/vm-image under qemu and drives it through its guest agent (exec, reboot,
## power cut, 9p share, restricted network); about 5 minutes under TCG. Needs qemu-system-x86 and socat
test-vm: vm-image
	NDP_VM_TEST=1 NDP_VM_IMAGE=$(BIN)/vm-image $(GO) test -v -count 1 -timeout 30m ./test/framework/vm/

## demo: `ndp plan` on every shipped example
demo: build
	./hack/demo.sh

SCALE_NODES ?= 1000

## scale: a rollout at scale on a real API server: SCALE_NODES Node objects (default 1,000) in 5 pools, as many
## simulated nodes running the real daemon code in one process (simulated systemd, reboot and kubelet only),
## ndp-controller as a process of its own; a None, a Restart and a Reboot change under maxUnavailable 10%, then, in
## NDP_SCALE_POLICY_ROUNDS rounds (default 2), the Restart and the Reboot under a RolloutPolicy that gates every
## pool, the Reboot under the same policy waiting for drained pods too, and both again without it, each on a fresh
## ndp-controller (the policy's cost: the mean with it against the mean without). Prints
## time against the ideal, peak unavailable nodes per pool from a watch (the run fails over budget), API requests per
## node, and the controller's CPU and memory; the figures as Markdown (with charts) in bin/scale.md, the log in
## bin/scale.log. About 30 minutes at 1,000 nodes on 2 cores; SCALE_NODES=100 for a short run.
## NDP_SCALE_PPROF=DIR saves ndp-controller's CPU profile of each change.
scale: build control-plane
	{ KUBEBUILDER_ASSETS=$(BIN) NDP_CONTROLLER_BIN=$(BIN)/ndp-controller NDP_SCALE_NODES=$(SCALE_NODES) NDP_SCALE_REPORT=$(BIN)/scale.md \
		$(GO) test -tags scale -run '^TestScale$$' -v -count 1 -timeout 60m ./test/scale/; echo $$? > $(BIN)/scale.rc; } 2>&1 | tee $(BIN)/scale.log
	@exit $$(cat $(BIN)/scale.rc)

MCO_REF ?= $(CURDIR)/../shared/mco-ref
SCALE_MCO_RENDERED ?= 500

## scale-mco: ndp beside the Machine Config Operator at a real cluster's size: SCALE_MCO_RENDERED rendered MachineConfigs
## (default 500; real ones from MCO_REF/realconfigs, varied, a tenth grown to 300 KB..1.2 MB with CA bundles), 5 pools and
## 25 nodes on one API server; peak RSS of the MCO's controllers (MCO_REF/mcc-ref) and of ndp-controller holding the same
## objects, and p50/p99 of MachineConfig dry-runs through the API server to ndp's preview vs a no-op webhook, same run.
## Figures in bin/scale-mco.md, the log in bin/scale-mco.log; about 5 minutes on 2 busy cores (docs/performance.md)
scale-mco: build control-plane
	{ KUBEBUILDER_ASSETS=$(BIN) NDP_CONTROLLER_BIN=$(BIN)/ndp-controller NDP_MCO_REF=$(MCO_REF) NDP_SCALE_MCO_RENDERED=$(SCALE_MCO_RENDERED) \
		NDP_SCALE_REPORT=$(BIN)/scale-mco.md $(GO) test -tags scale -run '^TestScaleMCO$$' -v -count 1 -timeout 40m ./test/scale/; echo $$? > $(BIN)/scale-mco.rc; } 2>&1 | tee $(BIN)/scale-mco.log
	@exit $$(cat $(BIN)/scale-mco.rc)

## compare: disruption avoided: ndp's plan for each change of examples/corpus/ vs MCO today and reboot on any change, in
## node-minutes for a 100-node pool (cost model at the top); fails naming any plan that drifts from the manifest
.PHONY: compare
compare:
	$(GO) run ./hack/compare

$(CONTROLLER_GEN):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

# CRDs ndp uses but does not own, copied from the pinned openshift/api module.
OPENSHIFT_CRDS := \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigpools.crd.yaml \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfignodes-Default.crd.yaml \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_kubeletconfigs.crd.yaml \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_containerruntimeconfigs.crd.yaml \
	config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml \
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml \
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagetagmirrorsets.crd.yaml \
	operator/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigurations-Default.crd.yaml \
	operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml

# CRDs the install manifests' overlays use but ndp neither owns nor ships: for the server-side dry-run of
# the openshift overlay (test/cluster/install_test.go). SCCs from the pinned openshift/api; PrometheusRule from
# the Prometheus Operator's module at PROMETHEUS_OPERATOR_VERSION (downloaded, not a dependency).
PROMETHEUS_OPERATOR_VERSION ?= v0.85.0
TEST_CRDS := test/cluster/testdata/crds

# ndp-controller's role per mode, from the markers of the code that runs in it: the mode decision
# (cmd/ndp-controller), the policy controller and validation, the previewer, and the mode's own controllers
# and webhook answers. The advisor's is overlays/openshift's, manifests/rbac/advisor. The base runs
# --mode=auto, which turns to the advisor where the MCO runs, so its role (manifests/rbac) is both modes',
# with the auto mode's own reads (controllers/rbac.go).
SHARED_RBAC_PATHS := paths=./cmd/ndp-controller paths=./controllers/nodedisruptionpolicy/... paths=./webhook/preview/... paths=./webhook/nodedisruptionpolicy/...
EXECUTOR_ONLY_RBAC_PATHS := paths=./controllers/executor/... paths=./webhook/executor/... paths=./webhook/certs/...
ADVISOR_ONLY_RBAC_PATHS := paths=./controllers/advisor/... paths=./webhook/advisor/...
AUTO_RBAC_PATHS := $(SHARED_RBAC_PATHS) $(EXECUTOR_ONLY_RBAC_PATHS) $(ADVISOR_ONLY_RBAC_PATHS) paths=./controllers
ADVISOR_RBAC_PATHS := $(SHARED_RBAC_PATHS) $(ADVISOR_ONLY_RBAC_PATHS)

## generate: deepcopy functions and CRDs (manifests/crds/) for apis/ with controller-gen, and
## openshift/api's CRDs for the types ndp uses, copied from the pinned module
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:dir=manifests/crds
	$(CONTROLLER_GEN) rbac:roleName=ndp-controller $(AUTO_RBAC_PATHS) output:rbac:dir=manifests/rbac
	$(CONTROLLER_GEN) rbac:roleName=ndp-controller $(ADVISOR_RBAC_PATHS) output:rbac:dir=manifests/rbac/advisor
	$(CONTROLLER_GEN) rbac:roleName=ndp-daemon paths=./daemon/... output:rbac:dir=manifests/rbac/daemon
	$(CONTROLLER_GEN) rbac:roleName=ndp-diff paths=./clusterdiff/... output:rbac:dir=manifests/rbac/diff
	@mkdir -p manifests/crds/openshift; dir=$$($(GO) list -m -f '{{.Dir}}' github.com/openshift/api); \
	for f in $(OPENSHIFT_CRDS); do install -m 0644 "$$dir/$$f" manifests/crds/openshift/$$(basename $$f); done
	@mkdir -p $(TEST_CRDS); dir=$$($(GO) list -m -f '{{.Dir}}' github.com/openshift/api); \
	install -m 0644 "$$dir/security/v1/zz_generated.crd-manifests/0000_03_config-operator_01_securitycontextconstraints.crd.yaml" $(TEST_CRDS)/
	@dir=$$($(GO) mod download -json github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	install -m 0644 "$$dir/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" $(TEST_CRDS)/

## lint: gofmt and go vet
lint: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags faults ./test/node/
	$(GO) vet -tags scale ./test/scale/

clean:
	rm -rf $(BIN)

## verify: generated code and CRDs are what `make generate` writes
verify: generate
	@git diff --exit-code -- apis manifests/crds manifests/rbac $(TEST_CRDS) || { echo "generated files are stale: run make generate"; exit 1; }
	@test -z "$$(git status --porcelain -- apis manifests/crds manifests/rbac $(TEST_CRDS))" || { echo "make generate wrote files that are not committed"; git status --short; exit 1; }
