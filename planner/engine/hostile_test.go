package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/ndp-dev/ndp/internal/bundletest"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
)

// hostileMargin is how far over the evaluation's budget the heap may peak:
// the watchdog samples every 2 ms and one builtin call may allocate a
// quarter of the budget before anything can stop it.
const hostileMargin = sandbox.DefaultEvalMemoryBytes / 4

// TestHostilePolicies runs policies written to exhaust the planner, each
// in the sandbox's default limits (5 s, 256 MiB per evaluation), and checks
// that each is stopped (at compile, load or evaluation time) with an error
// that says what happened and names the policy, and that the Go heap never
// grows more than the budget and a margin while it runs. The peaks are
// logged as a table. Without the memory watchdog, the numbers.range row
// runs to its deadline and peaks at about 1 GB, failing the test.
func TestHostilePolicies(t *testing.T) {
	if raceDetector {
		t.Skip("under -race the time limit trips before the limits this test checks: make test runs it without -race")
	}
	parseOverrun := parseAllocation(t, largestModules(1)[0].Modules[0].Source)
	small := builder.MachineConfig("new").WithFiles(builder.File("/etc/app/app.conf", "x")).Config(t)
	var many []builder.Entry
	for i := range 300 {
		many = append(many, builder.File(fmt.Sprintf("/etc/app/f%03d.conf", i), "x"))
	}
	large := builder.MachineConfig("new-large").WithFiles(many...).Config(t)
	old := builder.MachineConfig("old").Config(t)

	// plan loads a fixture (or takes the policies given), compiles it with
	// the default policy and evaluates it on a change.
	plan := func(to *machineconfig.Config, pols ...policy.Policy) func(t *testing.T, fixture string) error {
		return func(t *testing.T, fixture string) error {
			if fixture != "" {
				loaded, _, err := loader.Load(filepath.Join("testdata", "hostile", fixture))
				if err != nil {
					return err
				}
				pols = loaded
			}
			e, err := engine.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
			if err != nil {
				return err
			}
			_, err = evaluate(e, old, to)
			return err
		}
	}
	readBundle := func(data []byte) func(*testing.T, string) error {
		return func(t *testing.T, _ string) error {
			pol, err := loader.ReadBundle("hostile.tar.gz", bytes.NewReader(data), nil)
			if err != nil {
				return err
			}
			return plan(small, pol)(t, "")
		}
	}
	bigModule := regoModule("oversized", "package ndp.policy.oversized\n\n"+strings.Repeat("# padding\n", policy.MaxModuleBytes/10+1))
	regoTest := func(t *testing.T, _ string) error {
		pol := regoModule("tested", "package ndp.policy.tested\n\nclaims := set()\n")
		pol.Tests = []policy.Module{{Filename: "tested_test.rego", Source: "package ndp.policy.tested_test\n\ntest_fine if { count(data.ndp.policy.tested.claims) == 0 }\n\ntest_big_list if {\n\tcount([i | some i in numbers.range(1, 200000000)]) > 0\n}\n"}}
		var out bytes.Buffer
		sum, err := engine.RunRegoTests(context.Background(), []policy.Policy{pol}, nil, &out, engine.TestOptions{})
		if err == nil && sum.Failed+sum.Errored > 0 {
			err = fmt.Errorf("%d tests failed:\n%s", sum.Failed+sum.Errored, out.String())
		}
		if err != nil && !strings.Contains(out.String(), "used more than 256 MiB of memory") {
			t.Errorf("the report does not say why the test was stopped:\n%s", out.String())
		}
		return err
	}

	for _, tc := range []struct {
		name    string
		fixture string
		run     func(*testing.T, string) error
		// want are substrings of the error; policy is the policy it must
		// name ("" for none: a bundle that cannot be read has no name
		// yet, the error names the file); kind is ErrEvalMemory or
		// ErrEvalTimeout when the sandbox stopped the evaluation.
		want   []string
		policy string
		kind   error
		// parses: the sandbox stops this one between two modules' parses
		// (OPA's parser cannot be interrupted), so the heap may also grow
		// by what parsing one module allocates.
		parses bool
		ok     bool
	}{
		{name: "numbers.range: a list of 200 million numbers (the issue's policy)", fixture: "big-range.yaml", run: plan(small),
			want: []string{"evaluating policies used more than 256 MiB of memory", `policy "big-range"`}, policy: "big-range", kind: sandbox.ErrEvalMemory},
		{name: "nested comprehension: 10^10 pairs", fixture: "comprehension.rego", run: plan(small),
			want: []string{"used more than 256 MiB of memory"}, policy: "comprehension", kind: sandbox.ErrEvalMemory},
		{name: "walk over the input, building a large output", fixture: "walk.rego", run: plan(large),
			want: []string{"used more than 256 MiB of memory"}, policy: "walk", kind: sandbox.ErrEvalMemory},
		{name: "deep recursion", fixture: "recursion.rego", run: plan(small),
			want: []string{"recursion.rego:4:1", "rego_recursion_error", "depth is recursive"}, policy: "recursion"},
		{name: "regex: a 200 KiB pattern built at run time", fixture: "regex_huge_pattern.rego", run: plan(small),
			want: []string{"regex_huge_pattern.rego:8:2", "regex.match: the pattern is 204.0 KiB, more than the 16 KiB"}, policy: "regex_huge_pattern"},
		{name: "regex: 40 bytes expanding to 30,000 instructions", fixture: "regex_huge_program.rego", run: plan(small),
			want: []string{"regex.match: the pattern compiles to about 30004 instructions, more than the 20000"}, policy: "regex_huge_program"},
		{name: "regex: catastrophic backtracking (RE2 is linear: completes)", fixture: "regex_catastrophic.rego", run: plan(small), ok: true},
		{name: "concat: one 1 MiB string 10,000 times (strings.repeat)", fixture: "concat_repeat.rego", run: plan(small),
			want: []string{"concat_repeat.rego:11:10", "concat: its result could take up to 9.8 GiB, more than the 64 MiB one builtin call may allocate"}, policy: "concat_repeat"},
		{name: "concat: a string doubled 30 times", fixture: "concat_doubling.rego", run: plan(small),
			want: []string{"concat: its result could take up to 128 MiB"}, policy: "concat_doubling"},
		{name: "sprintf: 5,000 fields a million wide", fixture: "sprintf_bomb.rego", run: plan(small),
			want: []string{"sprintf: its result could take up to 4.7 GiB"}, policy: "sprintf_bomb"},
		{name: "json.marshal: one 1 MiB string shared 1,000 times", fixture: "marshal_shared.rego", run: plan(small),
			want: []string{"json.marshal: its result could take more than the 64 MiB"}, policy: "marshal_shared"},
		{name: "replace: an empty needle, 1 MiB by 1 MiB", fixture: "replace_bomb.rego", run: plan(small),
			want: []string{"replace: its result could take up to 1.0 TiB"}, policy: "replace_bomb"},
		{name: "oversized module", run: plan(small, bigModule),
			want: []string{"spec.rego: Too long", "262144"}, policy: "oversized"},
		{name: "a set of 30 modules of the largest size allowed (7.5 MiB)", run: plan(small, largestModules(30)...),
			want: []string{"compiling policies used more than 256 MiB of memory: the sandbox stopped it (the set holds 7.5 MiB of Rego"}, kind: sandbox.ErrEvalMemory, parses: true},
		{name: "oversized bundle (over 8 MiB compressed)", run: readBundle(hostileBundle(t, 12<<20, false)),
			want: []string{"hostile.tar.gz: invalid OPA bundle: the bundle is more than 8 MiB"}},
		{name: "bundle bomb (64 MiB inflated from 64 KiB)", run: readBundle(hostileBundle(t, 64<<20, true)),
			want: []string{"hostile.tar.gz: invalid OPA bundle: file hostile/data.json is 64.0 MiB uncompressed, and the files of a bundle may hold 8 MiB in all"}},
		{name: "bundle whose tar header declares a 100 GiB file (151 bytes)", run: readBundle(bundletest.Lying(t, "hostile/data.json", 100<<30)),
			want: []string{"hostile.tar.gz: invalid OPA bundle: file hostile/data.json is 100 GiB uncompressed"}},
		{name: "ownership: rules in another policy's package", fixture: "foreign_package.rego", run: plan(small),
			want: []string{`package ndp.policy.defaults is already owned by policy "default"`}, policy: "defaults"},
		{name: "ownership: a bundle in another policy's package", run: readBundle(bundleOf(t, "defaults", "package ndp.policy.defaults\n\nclaims := set()\n")),
			want: []string{`package ndp.policy.defaults is already owned by policy "default"`}, policy: "foreign"},
		{name: "ownership: replacing the engine's library", fixture: "foreign_library.rego", run: plan(small),
			want: []string{"package ndp.lib is not under ndp.policy"}},
		{name: "ownership: claiming in another policy's name", fixture: "foreign_name.rego", run: plan(small),
			want: []string{`unknown field "policy"`}, policy: "foreign_name"},
		{name: "ownership: claiming through a foreign directory", fixture: "foreign_match.rego", run: plan(small),
			want: []string{`match "/var/lib/other/" is neither the change's path or name nor one of its directories`}, policy: "foreign_match"},
		{name: "ndp test: a Rego test building a huge list", run: regoTest,
			want: []string{"Rego test data.ndp.policy.tested_test.test_big_list used more than 256 MiB of memory"}, kind: sandbox.ErrEvalMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			var err error
			growth := heapPeakDuring(func() { err = tc.run(t, tc.fixture) })
			took := time.Since(start)
			outcome := "stopped"
			if err == nil {
				outcome = "completed"
			}
			t.Logf("ROW | %s | %s | %s | +%d MiB | %v", tc.name, outcome, took.Round(10*time.Millisecond), growth>>20, err)
			limit := int64(sandbox.DefaultEvalMemoryBytes + hostileMargin)
			if tc.parses {
				limit = int64(sandbox.DefaultEvalMemoryBytes) + max(int64(hostileMargin), parseOverrun)
			}
			if growth > limit {
				t.Errorf("the heap grew by %d MiB, more than the budget and margin (%d MiB)", growth>>20, limit>>20)
			}
			if took > 20*time.Second {
				t.Errorf("took %s: the sandbox did not stop it", took)
			}
			if tc.ok {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("the hostile policy was not stopped")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
			if tc.policy != "" {
				var pe *policy.Error
				if !errors.As(err, &pe) || pe.Policy != tc.policy {
					t.Errorf("the error does not name policy %q: %#v", tc.policy, err)
				}
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("the error is not %v: %v", tc.kind, err)
			}
		})
	}
}

// heapPeakDuring runs f while sampling the Go heap every millisecond, and
// returns how far it rose above where it was before f.
// parseAllocation is what OPA's parser allocates for one module: a stop
// that lands while a module is parsed comes after the parse.
func parseAllocation(t *testing.T, src string) int64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := ast.ParseModule("largest.rego", src)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parsing one module of %d KiB allocates %d MiB", len(src)>>10, (after.TotalAlloc-before.TotalAlloc)>>20)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

func heapPeakDuring(f func()) int64 {
	runtime.GC()
	base := sandbox.HeapBytes()
	var peak atomic.Uint64
	peak.Store(base)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if h := sandbox.HeapBytes(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	f()
	close(done)
	<-exited
	if h := sandbox.HeapBytes(); h > peak.Load() {
		peak.Store(h)
	}
	return int64(peak.Load()) - int64(base)
}

// largestModules are n policies of one module each, just under
// MaxModuleBytes, of rules with nested comprehensions: parsed and compiled,
// each takes some 100 MiB.
func largestModules(n int) []policy.Policy {
	var pols []policy.Policy
	for k := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "package ndp.policy.large%02d\n\n", k)
		for i := 0; b.Len() < policy.MaxModuleBytes-200; i++ {
			fmt.Fprintf(&b, "r%d := [x | some x in [y | some y in [z | some z in input.changes]]]\n", i)
		}
		pols = append(pols, regoModule(fmt.Sprintf("large%02d", k), b.String()))
	}
	return pols
}

func regoModule(name, src string) policy.Policy {
	return policy.Policy{Name: name, Priority: 100, Origin: name + ".yaml: NodeDisruptionPolicy " + fmt.Sprintf("%q", name),
		Modules: []policy.Module{{Filename: name + ".yaml", Field: "spec.rego", Source: src}}}
}

// hostileBundle writes a bundle of one policy whose data file holds size
// bytes: random ones (incompressible), or one repeated byte (a bomb that
// inflates from a few KiB).
func hostileBundle(t *testing.T, size int, bomb bool) []byte {
	t.Helper()
	blob := bytes.Repeat([]byte("a"), size)
	if !bomb {
		raw := make([]byte, size*3/4)
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		blob = []byte(base64.StdEncoding.EncodeToString(raw))
	}
	return bundletest.Tarball(t, map[string][]byte{
		".manifest":           []byte(`{"roots": ["ndp/policy/hostile"], "metadata": {"name": "hostile"}}`),
		"hostile/policy.rego": []byte("package ndp.policy.hostile\n\nclaims := set()\n"),
		"hostile/data.json":   append(append([]byte(`{"blob": "`), blob...), '"', '}'),
	})
}

// bundleOf is a bundle named "foreign" whose module lives under root.
func bundleOf(t *testing.T, root, src string) []byte {
	t.Helper()
	return bundletest.Tarball(t, map[string][]byte{
		".manifest":   []byte(`{"roots": ["ndp/policy/` + root + `"], "metadata": {"name": "foreign"}}`),
		"policy.rego": []byte(src),
	})
}
