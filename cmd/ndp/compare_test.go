package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const chronyPolicyFile = "../../examples/policies/chrony.yaml"

// Adding the chrony policy turns chrony's reboot into a restart.
func TestComparePolicyChangesThePlan(t *testing.T) {
	code, out, errOut := ndp(t, append([]string{"plan", "-o", "text", "--compare-policy", chronyPolicyFile}, example("chrony")...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := `Plan rendered-worker-1a2b3c -> rendered-worker-7a8b9c, with policy chrony added (../../examples/policies/chrony.yaml: NodeDisruptionPolicy "chrony"):
  Reboot → Restart chronyd.service (no drain)
Changes decided differently (1):
  file /etc/chrony.conf: added  no policy: Reboot → policy chrony: Restart chronyd.service
`
	if out != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out, want)
	}

	// The JSON carries both plans and the verdict.
	code, out, errOut = ndp(t, append([]string{"plan", "--compare-policy", chronyPolicyFile}, example("chrony")...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var c comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !c.Changed || c.Change != "Reboot → Restart chronyd.service (no drain)" || !c.Before.Reboot || c.After.Reboot || c.After.Drain ||
		len(c.Policies) != 1 || c.Policies[0].Name != "chrony" || c.Policies[0].Replaces || len(c.Decisions) != 1 || c.Before.PolicyRevision == c.After.PolicyRevision {
		t.Errorf("comparison: %s", out)
	}
}

// A policy already given, or one that claims nothing the change touches,
// changes nothing: "no change".
func TestComparePolicyNoChange(t *testing.T) {
	dir := t.TempDir()
	unrelated := writeFile(t, dir, "unrelated.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: unrelated}
spec:
  files:
  - path: /etc/unrelated.conf
    actions: [{type: Restart, restart: {serviceName: unrelated.service}}]
`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unrelated policy", append([]string{"--compare-policy", unrelated}, example("chrony")...),
			"Plan rendered-worker-1a2b3c -> rendered-worker-7a8b9c, with policy unrelated added (" + unrelated + `: NodeDisruptionPolicy "unrelated"):
  no change: Reboot
`},
		{"the same policy again", append([]string{"--policy", chronyPolicyFile, "--compare-policy", chronyPolicyFile}, example("chrony")...),
			`Plan rendered-worker-1a2b3c -> rendered-worker-7a8b9c, with policy chrony replaced (../../examples/policies/chrony.yaml: NodeDisruptionPolicy "chrony"):
  no change: Restart chronyd.service (no drain)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, append([]string{"plan", "-o", "text"}, tc.args...)...)
			if code != exitOK || out != tc.want {
				t.Errorf("exit %d, printed:\n%s%s\nwant:\n%s", code, out, errOut, tc.want)
			}
		})
	}
}

// A replaced policy is compared, not added twice: chrony's restart becomes
// a reload.
func TestComparePolicyReplacesByName(t *testing.T) {
	dir := t.TempDir()
	reload := writeFile(t, dir, "chrony-reload.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: chrony}
spec:
  priority: 100
  files:
  - path: /etc/chrony.conf
    actions: [{type: Reload, reload: {serviceName: chronyd.service}}]
`)
	code, out, errOut := ndp(t, append([]string{"plan", "-o", "text", "--policy", chronyPolicyFile, "--compare-policy", reload}, example("chrony")...)...)
	if code != exitOK || !strings.Contains(out, "policy chrony replaced") || !strings.Contains(out, "  Restart chronyd.service (no drain) → Reload chronyd.service (no drain)\n") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestComparePolicyBadPath(t *testing.T) {
	dir := t.TempDir()
	empty := t.TempDir()
	broken := writeFile(t, dir, "broken.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: broken}
spec:
  rego: |
    package ndp.policy.broken

    x := := 1
`)
	for _, tc := range []struct {
		name string
		path string
		want []string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), []string{"nope.yaml", "no such file"}},
		{"no policy in it", empty, []string{"--compare-policy " + empty, "no policy found"}},
		{"does not compile", broken, []string{"broken.yaml", `NodeDisruptionPolicy "broken"`, "rego_parse_error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, append([]string{"plan", "--compare-policy", tc.path}, example("chrony")...)...)
			if code != exitInvalid || out != "" {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitInvalid, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	if code, _, errOut := ndp(t, append([]string{"plan", "--compare-policy"}, example("chrony")...)...); code != exitUsage {
		t.Errorf("--compare-policy without a path: exit %d\n%s", code, errOut)
	}
}

// Unreconcilable with or without the policy: exit 3, as ndp plan.
func TestComparePolicyUnreconcilable(t *testing.T) {
	code, out, errOut := ndp(t, append([]string{"plan", "-o", "text", "--compare-policy", chronyPolicyFile}, example("unreconcilable-disk")...)...)
	if code != exitUnreconcilable || !strings.Contains(out, "no change: unreconcilable (cannot be applied in place)") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}
