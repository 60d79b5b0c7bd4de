package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// hostContents is every file under a host root with its contents.
func hostContents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p := range hostFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

// While the Machine Config Operator manages the node, the daemon executes
// nothing (neither a new plan nor a journaled one), writes nothing to the
// host or the node, warns on the Node and looks again later; once the MCO
// is gone, the same Sync runs the update.
func TestDaemonStandsDownWhileTheMCOManagesTheNode(t *testing.T) {
	sch, _ := fuzzCodecs()
	chrony := fuzzPlan(fuzzFrom, fuzzTo, false, false, restart("chronyd.service"))
	target := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: fuzzTo, Labels: map[string]string{ndpmcv1.RenderedForLabel: "worker"}},
		Spec:   mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(fuzzToIgn)}},
		Status: ndpmcv1.MachineConfigStatus{PostConfigActions: []ndpmcv1.PostConfigActions{chrony}}}
	daemonSet := func(nodeSelector map[string]string) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: mcoguard.DaemonSetNamespace, Name: mcoguard.DaemonSetName}}
		ds.Spec.Template.Spec.NodeSelector = nodeSelector
		return ds
	}
	clusterOperator := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}}
	for _, tc := range []struct {
		name    string
		mco     []client.Object
		journal []byte
		// found is what the warning names; "" when the daemon acts.
		found string
	}{
		{name: "the MCO's DaemonSet", mco: []client.Object{daemonSet(nil)},
			found: "(DaemonSet openshift-machine-config-operator/machine-config-daemon)"},
		{name: "the MCO's ClusterOperator", mco: []client.Object{clusterOperator},
			found: "(ClusterOperator machine-config)"},
		{name: "a journaled update is not resumed", mco: []client.Object{daemonSet(nil)}, journal: fuzzJournal(t, chrony, false, 3, true, nil),
			found: "(DaemonSet openshift-machine-config-operator/machine-config-daemon)"},
		{name: "the MCO's DaemonSet skips the node: the daemon acts", mco: []client.Object{daemonSet(map[string]string{"kubernetes.io/os": "windows"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newFuzzRig(t, sch, target, fuzzTo, tc.journal)
			rec := events.NewFakeRecorder(16)
			r.d.Status.Recorder = rec
			// The fake cluster is shared by the package's tests: the MCO
			// must not outlive this one.
			for _, o := range tc.mco {
				o = o.DeepCopyObject().(client.Object)
				if err := r.k8s.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.k8s.Delete(context.Background(), o) })
			}
			var before corev1.Node
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: fuzzNode}, &before); err != nil {
				t.Fatal(err)
			}
			files := hostContents(t, r.root)

			after, err := r.d.Sync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.found == "" {
				if !slices.Contains(r.sd.calls, "Restart chronyd.service") {
					t.Fatalf("the MCO's daemon does not run on the node, yet ndp's did not update it: systemd calls %q", r.sd.calls)
				}
				return
			}
			if after != mcoRecheck {
				t.Errorf("Sync asks to look again after %s, want %s", after, mcoRecheck)
			}
			if len(r.sd.calls) > 0 || r.os.n > 0 || r.reboots.n > 0 || len(r.kube.Actions()) > 0 {
				t.Errorf("standing down, the daemon ran %q, %d OS changes, %d reboots, API calls %v", r.sd.calls, r.os.n, r.reboots.n, r.kube.Actions())
			}
			if diff := cmp.Diff(files, hostContents(t, r.root)); diff != "" {
				t.Errorf("standing down, the daemon changed the host (-before +after):\n%s", diff)
			}
			var node corev1.Node
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: fuzzNode}, &node); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Annotations, node.Annotations); diff != "" {
				t.Errorf("standing down, the daemon changed the node's annotations (-before +after):\n%s", diff)
			}
			select {
			case e := <-rec.Events:
				if !strings.HasPrefix(e, "Warning "+mcoguard.Reason+" ") || !strings.Contains(e, tc.found) || !strings.Contains(e, "stands down") {
					t.Errorf("event %q, want a Warning %s naming %s", e, mcoguard.Reason, tc.found)
				}
			default:
				t.Errorf("no event says the daemon stands down")
			}

			// Again: the same warning is not repeated at every look.
			if _, err := r.d.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rec.Events) > 0 {
				t.Errorf("the warning repeated: %q", <-rec.Events)
			}

			// The MCO gone, the update runs (resumed, for a journal).
			for _, o := range tc.mco {
				if err := r.k8s.Delete(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.d.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(r.sd.calls, "Restart chronyd.service") {
				t.Fatalf("the MCO gone, the daemon did not update the node: systemd calls %q", r.sd.calls)
			}
		})
	}
}
