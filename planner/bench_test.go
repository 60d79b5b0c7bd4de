package planner_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/oracle"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
)

// benchDirs are where rendered configs keep their files.
var benchDirs = []string{
	"/etc/kubernetes/", "/etc/kubernetes/static-pod-resources/", "/etc/systemd/system/",
	"/etc/NetworkManager/conf.d/", "/etc/NetworkManager/dispatcher.d/", "/usr/local/bin/",
	"/etc/sysconfig/", "/etc/crio/crio.conf.d/", "/var/lib/kubelet/", "/etc/containers/registries.d/",
	"/etc/nmstate/openshift/", "/etc/kubernetes/credential-providers/", "/etc/pki/ca-trust/source/anchors/",
}

// benchTablePaths come first in every config, so that changed=1 edits the
// pull secret (None) and the other counts reach the rest of the table.
var benchTablePaths = []string{
	"/var/lib/kubelet/config.json",
	"/etc/containers/policy.json",
	"/etc/containers/registries.conf",
	"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
	"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
	"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
}

// benchConfig renders a MachineConfig with n files, of which the first
// `changed` in a spread-out order carry edited contents when edit is true.
func benchConfig(tb testing.TB, name string, n, changed int, edit bool) []byte {
	tb.Helper()
	// registries.conf: one release mirror, as the MCO renders an IDMS.
	registriesConf, err := os.ReadFile("testdata/registries.conf")
	if err != nil {
		tb.Fatal(err)
	}
	edited := map[int]bool{}
	if edit {
		for i := range changed {
			edited[i*n/changed] = true
		}
	}
	mc := builder.MachineConfig(name).WithIgnitionVersion("3.5.0").
		WithOSImageURL("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111").
		WithEntries("passwd", "users", builder.Entry{"name": "core", "sshAuthorizedKeys": []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOne admin@example.com"}})
	for i := range n {
		path := fmt.Sprintf("%sgenerated-%04d.conf", benchDirs[i%len(benchDirs)], i)
		if i < len(benchTablePaths) {
			path = benchTablePaths[i]
		}
		data := fmt.Sprintf("# file %d, rendered from a MachineConfig template\n%s", i, strings.Repeat(fmt.Sprintf("setting.%d = some value for the node %d\n", i%7, i%13), 8))
		if path == registries.ConfPath {
			data = string(registriesConf)
		}
		if edited[i] {
			data += "# edited\n"
		}
		f := builder.FileSource(path, "data:,"+dataurl.EscapeString(data))
		if i%2 == 1 {
			f = builder.FileSource(path, "data:text/plain;charset=utf-8;base64,"+base64.StdEncoding.EncodeToString([]byte(data)))
		}
		mc.WithFiles(f.With("mode", 420).With("overwrite", true))
	}
	for i := range 20 {
		mc.WithEntries("systemd", "units", builder.Unit(fmt.Sprintf("generated-%02d.service", i),
			fmt.Sprintf("[Unit]\nDescription=generated %d\n\n[Service]\nExecStart=/usr/bin/true\n\n[Install]\nWantedBy=multi-user.target\n", i)).With("enabled", true))
	}
	return mc.Document()
}

// BenchmarkPlan times one plan end to end, from the two documents' bytes:
// parse both, diff, evaluate (Rego planner or oracle).
func BenchmarkPlan(b *testing.B) {
	ctx := context.Background()
	p := sharedPlanner(b)
	benchSizes(b, func(b *testing.B, n, changed int) {
		oldDoc := benchConfig(b, "rendered-worker-old", n, changed, false)
		newDoc := benchConfig(b, "rendered-worker-new", n, changed, true)
		benchAgree(b, p, oldDoc, newDoc, changed)
		b.Run("impl=rego", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				from, to := benchParse(b, oldDoc, newDoc)
				if _, err := p.Plan(ctx, planner.Request{From: from, To: to}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=oracle", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				from, to := benchParse(b, oldDoc, newDoc)
				cs, err := changeset.Diff(from, to)
				if err != nil {
					b.Fatal(err)
				}
				oracle.Plan(cs)
			}
		})
	})
}

// BenchmarkFloor is what a plan cannot go below: reading the two documents,
// a plain encoding/json decode of both into the Ignition (3.5) types, with no
// validation, diff or evaluation. hack/benchtable divides BenchmarkPlan by it.
func BenchmarkFloor(b *testing.B) {
	benchSizes(b, func(b *testing.B, n, changed int) {
		oldDoc := benchConfig(b, "rendered-worker-old", n, changed, false)
		newDoc := benchConfig(b, "rendered-worker-new", n, changed, true)
		b.Run("impl=decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, doc := range [][]byte{oldDoc, newDoc} {
					var mc struct {
						Spec struct {
							OSImageURL string          `json:"osImageURL"`
							Config     igntypes.Config `json:"config"`
						} `json:"spec"`
					}
					if err := json.Unmarshal(doc, &mc); err != nil {
						b.Fatal(err)
					}
					if len(mc.Spec.Config.Storage.Files) != n {
						b.Fatalf("%d files, want %d", len(mc.Spec.Config.Storage.Files), n)
					}
				}
			}
		})
	})
}

// benchSizes runs body for files ∈ {200, 2000} × changed ∈ {1, 20, all},
// named files=N/changed=M so that hack/benchtable can pair the results.
func benchSizes(b *testing.B, body func(b *testing.B, n, changed int)) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			for _, changed := range []int{1, 20, n} {
				label := fmt.Sprint(changed)
				if changed == n {
					label = "all"
				}
				b.Run("changed="+label, func(b *testing.B) { body(b, n, changed) })
			}
		})
	}
}

// benchParse parses the old and new documents (in the benchmarks, timed:
// what the CLI does per plan).
func benchParse(tb testing.TB, oldDoc, newDoc []byte) (from, to *machineconfig.Config) {
	tb.Helper()
	from, err := machineconfig.Parse("old", oldDoc)
	if err != nil {
		tb.Fatal(err)
	}
	to, err = machineconfig.Parse("new", newDoc)
	if err != nil {
		tb.Fatal(err)
	}
	return from, to
}

// benchAgree checks, untimed, that the inputs are what the benchmark claims
// and that both implementations plan them alike.
func benchAgree(b *testing.B, p *planner.Planner, oldDoc, newDoc []byte, changed int) {
	from, to := benchParse(b, oldDoc, newDoc)
	plan, err := p.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := changeset.Diff(from, to)
	if err != nil {
		b.Fatal(err)
	}
	if len(cs.Changes) != changed {
		b.Fatalf("%d changes, want %d", len(cs.Changes), changed)
	}
	actions, drain, reboot := oracle.Plan(cs)
	if !reflect.DeepEqual(actions, plan.Actions) || drain != plan.Drain || reboot != plan.Reboot {
		b.Fatalf("rego %v drain=%t reboot=%t, oracle %v drain=%t reboot=%t", plan.Actions, plan.Drain, plan.Reboot, actions, drain, reboot)
	}
}

// BenchmarkEvaluate times what follows parsing, which dominates
// BenchmarkPlan: diff and evaluate (Rego planner or oracle) on configs
// already parsed.
func BenchmarkEvaluate(b *testing.B) {
	ctx := context.Background()
	p := sharedPlanner(b)
	benchSizes(b, func(b *testing.B, n, changed int) {
		from, to := benchParse(b, benchConfig(b, "rendered-worker-old", n, changed, false), benchConfig(b, "rendered-worker-new", n, changed, true))
		b.Run("impl=rego", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Plan(ctx, planner.Request{From: from, To: to}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=oracle", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cs, err := changeset.Diff(from, to)
				if err != nil {
					b.Fatal(err)
				}
				oracle.Plan(cs)
			}
		})
	})
}

// contentReadingPolicy reads inside files: under /etc/sysconfig/, a change
// of comment lines only needs nothing. Its presence makes every plan parse
// and diff the changed files and put their contents in the Rego input.
const contentReadingPolicy = `package ndp.policy.comments

import data.ndp.lib

claims contains {"change": c.id, "match": "/etc/sysconfig/", "actions": lib.none, "reason": "comment lines only"} if {
	some c in lib.file_changes
	"/etc/sysconfig/" in c.dirs
	every l in array.concat(lib.added_lines(c), lib.removed_lines(c)) {
		startswith(l, "#")
	}
}
`

// BenchmarkContent times a plan end to end, as BenchmarkPlan, with and
// without file contents in the change set. The four ways take turns within
// each iteration, so that a shared, busy machine slows them alike, and
// each is reported as <impl>-ns/plan:
//
//   - none: the change set without contents (changeset.Options
//     NoContents): planning as it was before policies could read contents,
//     the floor;
//   - kept: the default policies, which read no contents: Diff keeps the
//     decoded contents, nothing parses them (the engine sees no policy
//     naming them);
//   - built: the default policies with engine.Options.AlwaysContent: every
//     changed file parsed, diffed and converted to Rego values;
//   - reads: the default policies and a policy reading text diffs.
//
// hack/benchtable divides each by none.
func BenchmarkContent(b *testing.B) {
	ctx := context.Background()
	defaults := sharedPlanner(b)
	always, err := planner.New(ctx, []policy.Policy{policy.DefaultPolicy()}, engine.Options{EvalTimeout: time.Minute, AlwaysContent: true})
	if err != nil {
		b.Fatal(err)
	}
	reads, err := planner.New(ctx, []policy.Policy{policy.DefaultPolicy(), policytest.Rego("comments", 100, contentReadingPolicy)}, engine.Options{EvalTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if defaults.Engine.ReadsContent() || !always.Engine.ReadsContent() || !reads.Engine.ReadsContent() {
		b.Fatal("ReadsContent: the default policies must read no contents, the others must")
	}
	impls := []struct {
		name string
		p    *planner.Planner
		opts changeset.Options
	}{
		{"none", defaults, changeset.Options{NoContents: true}},
		{"kept", defaults, changeset.Options{}},
		{"built", always, changeset.Options{}},
		{"reads", reads, changeset.Options{}},
	}
	benchSizes(b, func(b *testing.B, n, changed int) {
		oldDoc := benchConfig(b, "rendered-worker-old", n, changed, false)
		newDoc := benchConfig(b, "rendered-worker-new", n, changed, true)
		spent := make([]time.Duration, len(impls))
		plans := 0
		b.ReportAllocs()
		for b.Loop() {
			// Each iteration starts with another way, so that none always
			// follows the same one.
			for j := range impls {
				k := (plans + j) % len(impls)
				start := time.Now()
				from, to := benchParse(b, oldDoc, newDoc)
				cs, err := changeset.DiffWith(from, to, impls[k].opts)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := impls[k].p.PlanChanges(ctx, cs, nil); err != nil {
					b.Fatal(err)
				}
				spent[k] += time.Since(start)
			}
			plans++
		}
		for k, impl := range impls {
			b.ReportMetric(float64(spent[k].Nanoseconds())/float64(plans), impl.name+"-ns/plan")
		}
	})
}
