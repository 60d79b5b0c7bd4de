//go:build faults

package node

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/bundletest"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// hostileRule is a policy whose claims rule does what rule says for every
// change it sees; its Rego tests pass (they never evaluate the rule), as
// the new user's did.
func hostileRego(pkg, body string) (rego, tests string) {
	rego = fmt.Sprintf(`package ndp.policy.%[1]s

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	c.kind == "file"
%[2]s
}
`, pkg, body)
	tests = fmt.Sprintf(`package ndp.policy.%[1]s_test

test_loads if true
`, pkg)
	return rego, tests
}

// goodRego is the revision each hostile one replaces: it claims one file
// with a restart, and its tests pass.
func goodRego(pkg string) (rego, tests string) {
	return fmt.Sprintf(`package ndp.policy.%[1]s

claims contains {"change": c.id, "match": "/etc/%[1]s.conf", "actions": [{"type": "Restart", "restart": {"serviceName": "%[1]s.service"}}]} if {
	some c in input.changes
	c.path == "/etc/%[1]s.conf"
}
`, pkg), fmt.Sprintf(`package ndp.policy.%[1]s_test

import data.ndp.policy.%[1]s

test_claims_its_file if {
	some claim in %[1]s.claims with input.changes as [{"id": "file:/etc/%[1]s.conf", "kind": "file", "path": "/etc/%[1]s.conf"}]
	claim.actions[0].type == "Restart"
}
`, pkg)
}

// peakRSS is a process's peak resident set (VmHWM), in MiB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")), &kb)
			return kb / 1024
		}
	}
	return -1
}

// Part 3: hostile policies, one per trial, each against a fresh
// ndp-controller process: a good revision is accepted first, then the
// hostile one replaces it. Each must be refused with a clear status, the
// good revision staying in force, and the controller must live through it
// with its peak resident memory (VmHWM) bounded.
func TestFaultsHostilePolicies(t *testing.T) {
	const peakLimitMiB = 768 // the controller's budget: 256 MiB per evaluation, plus its own
	rows := []struct {
		name, pkg, body string
		rego            string // replaces the generated module
		bundle          []byte // served from a ConfigMap through bundleRef
		apiRefuses      string // the API server refuses the object itself
		want            string // in the Degraded message
	}{
		{name: "list over numbers.range(1, 200000000)", pkg: "range_list",
			body: "\txs := [i | some i in numbers.range(1, 200000000)]\n\tcount(xs) > 1", want: "memory"},
		{name: "nested comprehension 20000 x 20000", pkg: "nested",
			body: "\txs := [[i, j] | some i in numbers.range(1, 20000); some j in numbers.range(1, 20000)]\n\tcount(xs) > 1", want: "memory"},
		{name: "set of 50M strings", pkg: "set_bomb",
			body: "\txs := {sprintf(\"%d\", [i]) | some i in numbers.range(1, 50000000)}\n\tcount(xs) > 1", want: "memory"},
		{name: "deep recursion", pkg: "recursion",
			rego: "package ndp.policy.recursion\n\nf(x) := y if {\n\ty := f(x)\n}\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tf(c) == 1\n}\n", want: "recursi"},
		{name: "giant regular expression (1M alternatives)", pkg: "regex",
			body: "\tpat := concat(\"|\", [sprintf(\"a%d\", [i]) | some i in numbers.range(1, 1000000)])\n\tregex.match(pat, c.path)", want: "regex"},
		{name: "walk over a 3M-element document", pkg: "walk",
			body: "\tbig := [{\"k\": i} | some i in numbers.range(1, 3000000)]\n\tn := count([p | walk(big, [p, _])])\n\tn > 1", want: "memory"},
		{name: "replace with an empty needle: 1 MiB x 1 MiB in one builtin call", pkg: "replace",
			body: "\tmib := concat(\"\", [concat(\"\", [\"x\" | some _ in numbers.range(1, 1024)]) | some _ in numbers.range(1, 1024)])\n\ts := replace(mib, \"\", mib)\n\tcount(s) > 1", want: "replace"},
		{name: "json.marshal of 1,000 references to a 1 MiB string (1 GiB of JSON)", pkg: "marshal",
			body: "\tmib := concat(\"\", [concat(\"\", [\"x\" | some _ in numbers.range(1, 1024)]) | some _ in numbers.range(1, 1024)])\n\ts := json.marshal([mib | some _ in numbers.range(1, 1000)])\n\tcount(s) > 1", want: "json.marshal"},
		{name: "concat of 200M strings", pkg: "concat",
			body: "\ts := concat(\"\", [\"xxxxxxxxxx\" | some _ in numbers.range(1, 200000000)])\n\tcount(s) > 1", want: "memory"},
		{name: "rules in the default policy's package", pkg: "foreign_package",
			rego: "package ndp.policy.defaults\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n}\n", want: "already owned"},
		{name: "claims through a directory the change is not under", pkg: "foreign_match",
			rego: "package ndp.policy.foreign_match\n\nclaims contains {\"change\": c.id, \"match\": \"/var/lib/other/\", \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tc.kind == \"file\"\n}\n", want: "match"},
		{name: "module over 256 KiB", pkg: "oversized",
			rego: "package ndp.policy.oversized\n\n#" + strings.Repeat("x", 300<<10) + "\n", apiRefuses: "Too long"},
		{name: "bundle that inflates to 200 MiB (gzip bomb)", pkg: "bomb", bundle: bundletest.Bomb(t, 200<<20), want: "bundle"},
	}
	for _, row := range rows {
		trial(t, "hostile-policies", row.pkg, func(tt *testing.T) string {
			ctx := context.Background()
			cs := startControllers(tt, 1)
			defer cs.stop(tt)
			name := "hostile-" + strings.ReplaceAll(row.pkg, "_", "-")
			good, goodTests := goodRego(row.pkg)
			p := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
			p.Spec.Rego, p.Spec.RegoTests = good, goodTests
			if err := k8s.Create(ctx, p); err != nil {
				tt.Fatal(err)
			}
			defer func() { _ = k8s.Delete(context.Background(), p) }()
			var goodRevision string
			testkit.Eventually(tt, "the good policy is accepted", func() (bool, string) {
				_ = k8s.Get(ctx, client.ObjectKeyFromObject(p), p)
				c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionAccepted)
				goodRevision = p.Status.Revision
				return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation, fmt.Sprintf("good revision not accepted: %+v", p.Status.Conditions)
			}, testkit.Within(3*time.Minute))
			before := peakRSS(cs.pid(0))

			// The hostile revision.
			if row.bundle != nil {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: name}, BinaryData: map[string][]byte{"bundle.tar.gz": row.bundle}}
				if err := k8s.Create(ctx, cm); err != nil {
					tt.Fatal(err)
				}
				defer func() { _ = k8s.Delete(context.Background(), cm) }()
				p.Spec.BundleRef = &v1alpha1.BundleReference{Namespace: "ndp-system", Name: name, Key: "bundle.tar.gz"}
			} else {
				p.Spec.Rego, p.Spec.RegoTests = hostileRego(row.pkg, row.body)
				if row.rego != "" {
					p.Spec.Rego, p.Spec.RegoTests = row.rego, ""
				}
			}
			start := time.Now()
			err := k8s.Update(ctx, p)
			if row.apiRefuses != "" {
				if err == nil || !strings.Contains(err.Error(), row.apiRefuses) {
					tt.Fatalf("the API server took it: %v", err)
				}
				return fmt.Sprintf("%s: refused by the API server: %s", row.name, truncateText(err.Error(), 120))
			}
			if err != nil {
				tt.Fatal(err)
			}
			var degraded *metav1.Condition
			testkit.Eventually(tt, "the hostile policy degrades", func() (bool, string) {
				_ = k8s.Get(ctx, client.ObjectKeyFromObject(p), p)
				degraded = meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded)
				return degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.ObservedGeneration == p.Generation,
					fmt.Sprintf("hostile generation %d not refused: %+v", p.Generation, p.Status.Conditions)
			}, testkit.Within(3*time.Minute))
			took := time.Since(start)
			if !strings.Contains(strings.ToLower(degraded.Message), row.want) {
				tt.Errorf("Degraded message %q does not say %q", degraded.Message, row.want)
			}
			if !strings.Contains(degraded.Message, name) && !strings.Contains(degraded.Message, row.pkg) {
				tt.Errorf("Degraded message %q does not name the policy", degraded.Message)
			}
			if p.Status.Revision != goodRevision {
				tt.Errorf("revision %s in force, want the good %s", p.Status.Revision, goodRevision)
			}
			if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionActive); c == nil || c.Status != metav1.ConditionTrue {
				tt.Errorf("Active: %+v", c)
			}
			peak := peakRSS(cs.pid(0))
			if restarts := cs.replicas[0].restarts; restarts > 0 {
				tt.Errorf("ndp-controller restarted %d times (killed, out of memory?)", restarts)
			}
			if peak > peakLimitMiB {
				tt.Errorf("ndp-controller peaked at %.0f MiB resident", peak)
			}
			msg := degraded.Message
			if i := strings.Index(msg, "): "); strings.HasPrefix(msg, "evaluated before activation") && i > 0 {
				msg = msg[i+3:] // the probe's explanation, in the status, not here
			}
			return fmt.Sprintf("%s: refused in %.1fs: %s [%s]; revision %s still in force; ndp-controller peak RSS %.0f MiB (%.0f MiB before)",
				row.name, took.Seconds(), degraded.Reason, truncateText(msg, 220), truncateText(goodRevision, 24), peak, before)
		})
	}
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
