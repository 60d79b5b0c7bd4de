package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// whyNode creates a Node with the daemon's annotations.
func whyNode(t *testing.T, name, current, desired, state string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		ndpmcv1.CurrentConfigAnnotation: current, ndpmcv1.DesiredConfigAnnotation: desired, ndpmcv1.StateAnnotation: state}}}
	create(t, n)
	return n
}

// storeExampleHistory stores a shipped example NodeHistory as the node's,
// owned by it as ndp's writers own it, and returns it as stored.
func storeExampleHistory(t *testing.T, file string, node *corev1.Node) *v1alpha1.NodeHistory {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h v1alpha1.NodeHistory
	if err := yaml.UnmarshalStrict(data, &h); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	status := h.Status
	h.ObjectMeta = metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}
	create(t, &h)
	h.Status = status
	// The CRD's schema must take the example whole: status is written
	// through its subresource, as ndp's writers do.
	if err := k8s.Status().Update(context.Background(), &h); err != nil {
		t.Fatalf("storing the status of %s: %v", file, err)
	}
	if diff := cmp.Diff(status, h.Status); diff != "" {
		t.Fatalf("the API server changed the status of %s (-example +stored):\n%s", file, diff)
	}
	return &h
}

// TestKubectlNdpWhy stores the shipped example NodeHistories on the API
// server and asks the real kubectl, running ndp as its plugin, why the
// nodes rebooted: from the cluster, and from a saved copy (--file).
func TestKubectlNdpWhy(t *testing.T) {
	dir := testkit.KubectlNdp(t)
	plugin := filepath.Join(dir, "kubectl-ndp")
	for _, ex := range []struct {
		node, file, example string
		want                []string
	}{
		{"why-executor", "../../examples/history/ndp-worker-1.yaml", "ndp-worker-1", []string{
			"Node why-executor: 3 updates recorded, newest first (ndp keeps the last 10 updates of each node; the history is deleted with the node).\n",
			"\nUpdate 1 of 3 (newest): rendered-worker-99b93f3002fe49cc5205ddc4990f357e -> rendered-worker-5b3e018212ed70053f2a62ed378187c1\n",
			"  Run by:   ndp-daemon\n",
			"  file /etc/ndp-example/app.conf: added (MachineConfig 60-worker-app)\n    decided by: no policy -> Reboot (no policy claims this change)\n",
			"Planned: drain, Reboot\n",
			"  15:25:36  drain           Done  took 4m12s  resumed after an unplanned reboot (boot 8cace772-46fa-4c18-bf28-4eed8cbccab9 -> 5d156e29-5e6a-4574-9fc5-b82ae3568a1c)\n",
			"  15:29:48  reboot          Done  took 2m1s   requested in boot 5d156e29-5e6a-4574-9fc5-b82ae3568a1c\n",
			"Boot: 8cace772-46fa-4c18-bf28-4eed8cbccab9 -> d52e4ccb-00c3-4810-8338-1418a57dbbde (rebooted)\n",
			"\nUpdate 3 of 3: ",
		}},
		{"why-advisor", "../../examples/history/mco-worker-0.yaml", "worker-0", []string{
			"  Run by:   the MCO's machine-config-daemon, observed by ndp's advisor\n",
			"Foretold: Special (no drain, no reboot)\n  from UpdateForecast worker-fe159d9884d43111452cf7e9b3606d20-0c937847d350c53691406390632ded4d\n",
			"Observed:\n",
			"Verdict: Mismatch (checked against UpdateForecast worker-fe159d9884d43111452cf7e9b3606d20-0c937847d350c53691406390632ded4d)\n",
			"  reboot: foretold no, observed yes -> Mismatch\n",
			"  reload crio.service: foretold yes, observed unknown -> NotObservable\n",
			"Verdict: Agreed (checked against UpdateForecast worker-2e8a88e02c79c6b2a2e46bb3f0d6b1d5-fe159d9884d43111452cf7e9b3606d20)\n",
		}},
	} {
		t.Run(ex.node, func(t *testing.T) {
			// The example's own rendering, offline.
			offline, err := exec.Command(plugin, "why", ex.example, "--file", ex.file).CombinedOutput()
			if err != nil {
				t.Fatalf("ndp why --file %s: %v\n%s", ex.file, err, offline)
			}
			var stored v1alpha1.NodeHistory
			data, _ := os.ReadFile(ex.file)
			if err := yaml.Unmarshal(data, &stored); err != nil {
				t.Fatal(err)
			}
			to := stored.Status.Updates[0].To
			node := whyNode(t, ex.node, to, to, ndpmcv1.StateDone)
			h := storeExampleHistory(t, ex.file, node)

			out, errOut, code := kubectlPlugin(t, dir, "ndp", "why", ex.node)
			want := "Node " + ex.node + " now: runs " + to + ", state Done; no update in progress.\n" +
				strings.Replace(string(offline), "Node "+ex.example+":", "Node "+ex.node+":", 1)
			if code != 0 || out != want {
				t.Fatalf("kubectl ndp why %s: exit %d\n%s%s\nwant (the example's --file rendering under the node's state):\n%s", ex.node, code, out, errOut, want)
			}
			for _, w := range ex.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl ndp why %s lacks %q:\n%s", ex.node, w, out)
				}
			}

			// A support bundle: the NodeHistory saved with kubectl, read
			// back with --file, tells the same (without the node's state).
			saved, err := kubectl(t, "get", "nodehistory", ex.node, "-o", "yaml")
			if err != nil {
				t.Fatalf("kubectl get nodehistory: %v\n%s", err, saved)
			}
			f := filepath.Join(t.TempDir(), "history.yaml")
			if err := os.WriteFile(f, []byte(saved), 0o600); err != nil {
				t.Fatal(err)
			}
			fromFile, errOut, code := kubectlPlugin(t, dir, "ndp", "why", ex.node, "--file", f)
			if _, rest, _ := strings.Cut(out, "\n"); code != 0 || fromFile != rest {
				t.Errorf("kubectl ndp why %s --file (saved with kubectl get -o yaml): exit %d\n%s%s\nwant:\n%s", ex.node, code, fromFile, errOut, rest)
			}

			// -o json --update 1: the newest update as stored.
			js, errOut, code := kubectlPlugin(t, dir, "ndp", "why", ex.node, "--update", "1", "-o", "json")
			var r struct {
				Node      string `json:"node"`
				NodeState *struct {
					Current, Desired, State string
					Updating                bool
				} `json:"nodeState"`
				Updates []v1alpha1.NodeUpdate `json:"updates"`
			}
			if code != 0 || json.Unmarshal([]byte(js), &r) != nil {
				t.Fatalf("-o json: exit %d\n%s%s", code, js, errOut)
			}
			if r.Node != ex.node || r.NodeState == nil || r.NodeState.Current != to || r.NodeState.Updating {
				t.Errorf("-o json: node %q, state %+v", r.Node, r.NodeState)
			}
			if diff := cmp.Diff(h.Status.Updates[:1], r.Updates); diff != "" {
				t.Errorf("-o json --update 1: (-stored +printed):\n%s", diff)
			}

			// --update beyond what is kept.
			n := len(h.Status.Updates)
			if _, errOut, code := kubectlPlugin(t, dir, "ndp", "why", ex.node, "--update", "11"); code != 1 || !strings.Contains(errOut, "--update 11: node "+ex.node+" has ") {
				t.Errorf("--update 11 of %d: exit %d, %s", n, code, errOut)
			}
		})
	}

	// A node ndp has not seen updated: said so (exit 0), with what is kept.
	whyNode(t, "why-new", "rendered-worker-a", "rendered-worker-b", ndpmcv1.StateWorking)
	out, errOut, code := kubectlPlugin(t, dir, "ndp", "why", "why-new")
	if code != 0 || !strings.HasPrefix(out, "Node why-new now: runs rendered-worker-a, sent to rendered-worker-b, state Working: an update is in progress.\n"+
		"No update of node why-new is recorded: ndp has not seen an update of this node yet") ||
		!strings.HasSuffix(out, "ndp keeps the last 10 updates of each node; the history is deleted with the node.\n") {
		t.Errorf("kubectl ndp why why-new: exit %d\n%s%s", code, out, errOut)
	}
	// An unknown node: exit 1.
	if out, errOut, code := kubectlPlugin(t, dir, "ndp", "why", "why-nope"); code != 1 || !strings.Contains(errOut, `node "why-nope" not found, and no NodeHistory of it`) {
		t.Errorf("kubectl ndp why why-nope: exit %d\n%s%s", code, out, errOut)
	}
}
