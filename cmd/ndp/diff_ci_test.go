package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// TestGitHubActionsDiffStepOnAPullRequest runs the diff step of
// examples/ci/github-actions.yaml, as the workflow file has it, on a pull
// request: a Git repository whose base commit holds the cluster's snapshot
// and manifests, and two pull requests on top of it. The step's markdown
// (what the workflow posts as a comment) and the exit code it records are
// checked: a reboot fails the gate, a crio reload passes it.
func TestGitHubActionsDiffStepOnAPullRequest(t *testing.T) {
	script := workflowStep(t, "../../examples/ci/github-actions.yaml", "diff")
	bin := testkit.KubectlNdp(t)
	r := newGitRepo(t, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	snapshot, err := os.ReadFile("../../examples/diff/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r.write("cluster-snapshot/state.yaml", string(snapshot))
	r.write("clusters/prod/README.md", "The cluster's manifests.\n")
	r.git("add", ".")
	r.git("commit", "-q", "-m", "the cluster")
	base := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	for _, pr := range []struct {
		name, file string
		rc         string
		markdown   []string
	}{
		{"chrony", "50-worker-chrony.yaml", "1", []string{
			"### kubectl ndp diff: 1 of 2 MachineConfigPools change, the most disruptive plan: nodes reboot\n",
			"| worker | 4 | `b07d543a` → `",
			"| **drain, Reboot** | Restart chronyd.service |",
			"| `file /etc/chrony.conf` | no node disruption policy | Reboot | MachineConfig 50-worker-chrony |",
		}},
		{"mirror", "idms-quay-mirror.yaml", "0", []string{
			"### kubectl ndp diff: 2 of 2 MachineConfigPools change, the most disruptive plan: ",
			"| master | 3 | `d1ec4ca4` → `",
			"| Special (reload crio) | Reload crio.service |",
		}},
	} {
		t.Run(pr.name, func(t *testing.T) {
			r.git("checkout", "-q", "-B", pr.name, base)
			data, err := os.ReadFile(filepath.Join("../../examples/diff/pull-request", pr.file))
			if err != nil {
				t.Fatal(err)
			}
			r.write("clusters/prod/machineconfigs/"+pr.file, string(data))
			r.git("add", ".")
			r.git("commit", "-q", "-m", pr.name)
			out := filepath.Join(t.TempDir(), "github-output")
			code, log := r.run([]string{"BASE=" + base, "MANIFESTS=clusters/prod", "GITHUB_OUTPUT=" + out}, "bash", "-e", "-o", "pipefail", "-c", script)
			if code != 0 {
				t.Fatalf("the step exits %d (the workflow records the diff's code and fails later):\n%s", code, log)
			}
			recorded, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(recorded)); got != "rc="+pr.rc {
				t.Errorf("the step recorded %q, want rc=%s", got, pr.rc)
			}
			md, err := os.ReadFile(filepath.Join(r.dir, "ndp-diff.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range pr.markdown {
				if !strings.Contains(string(md), want) {
					t.Errorf("the comment lacks %q:\n%s", want, md)
				}
			}
		})
	}
}

// workflowStep is the run script of the step with the given id in a
// GitHub Actions workflow.
func workflowStep(t *testing.T, path, id string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				ID  string `json:"id"`
				Run string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.ID == id {
				return s.Run
			}
		}
	}
	t.Fatalf("%s: no step with id %q", path, id)
	return ""
}
