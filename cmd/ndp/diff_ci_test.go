package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
	r, base := ciRepo(t)
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
			r.branch(base, pr.name, pr.file)
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

// TestGitLabCIJobOnAMergeRequest runs the script of
// examples/ci/gitlab-ci.yml's job, as the file has it, on two merge
// requests: the job's exit code (a reboot fails it, a crio reload passes)
// and the note it posts, to a GitLab API on loopback.
func TestGitLabCIJobOnAMergeRequest(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not on PATH")
	}
	data, err := os.ReadFile("../../examples/ci/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Job struct {
			Script []string `json:"script"`
		} `json:"ndp-diff"`
	}
	if err := yaml.Unmarshal(data, &job); err != nil {
		t.Fatal(err)
	}
	script := job.Job.Script[len(job.Job.Script)-1] // the diff; the others install kubectl-ndp
	notes := make(chan string, 4)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/api/v4/projects/42/merge_requests/7/notes" || req.Header.Get("PRIVATE-TOKEN") != "glpat-test" {
			http.Error(w, "unexpected "+req.Method+" "+req.URL.Path, http.StatusNotFound)
			return
		}
		if err := req.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		notes <- req.PostForm.Get("body")
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(api.Close)
	r, base := ciRepo(t)
	for _, mr := range []struct {
		name, file string
		code       int
		note       string
	}{
		{"chrony", "50-worker-chrony.yaml", 1, "| **drain, Reboot** | Restart chronyd.service |"},
		{"mirror", "idms-quay-mirror.yaml", 0, "| Special (reload crio) | Reload crio.service |"},
	} {
		t.Run(mr.name, func(t *testing.T) {
			r.branch(base, "mr-"+mr.name, mr.file)
			code, log := r.run([]string{"CI_MERGE_REQUEST_DIFF_BASE_SHA=" + base, "MANIFESTS=clusters/prod", "NDP_NOTE_TOKEN=glpat-test",
				"CI_API_V4_URL=" + api.URL + "/api/v4", "CI_PROJECT_ID=42", "CI_MERGE_REQUEST_IID=7"}, "sh", "-e", "-c", script)
			if code != mr.code {
				t.Errorf("the job exits %d, want %d:\n%s", code, mr.code, log)
			}
			select {
			case note := <-notes:
				if !strings.Contains(note, mr.note) {
					t.Errorf("the note lacks %q:\n%s", mr.note, note)
				}
			default:
				t.Errorf("no note was posted:\n%s", log)
			}
		})
	}
}

// ciRepo is a Git repository as the CI examples expect one: the
// cluster's snapshot (examples/diff/cluster.yaml) in cluster-snapshot/ and
// its manifests under clusters/prod, committed; kubectl-ndp on its PATH.
// It returns the repository and the commit, the base of every request.
func ciRepo(t *testing.T) (*gitRepo, string) {
	t.Helper()
	r := newGitRepo(t, "PATH="+testkit.KubectlNdp(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	snapshot, err := os.ReadFile("../../examples/diff/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r.write("cluster-snapshot/state.yaml", string(snapshot))
	r.write("clusters/prod/README.md", "The cluster's manifests.\n")
	r.git("add", ".")
	r.git("commit", "-q", "-m", "the cluster")
	return r, strings.TrimSpace(r.git("rev-parse", "HEAD"))
}

// branch commits, on a new branch from base, one of the example pull
// request's manifests under clusters/prod/machineconfigs.
func (r *gitRepo) branch(base, name, file string) {
	r.t.Helper()
	r.git("checkout", "-q", "-B", name, base)
	data, err := os.ReadFile(filepath.Join("../../examples/diff/pull-request", file))
	if err != nil {
		r.t.Fatal(err)
	}
	r.write("clusters/prod/machineconfigs/"+file, string(data))
	r.git("add", ".")
	r.git("commit", "-q", "-m", name)
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
