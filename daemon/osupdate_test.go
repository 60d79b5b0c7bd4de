package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/osupdate"
)

// noCommands fails the test if an updater runs anything.
type noCommands struct{ t *testing.T }

func (n noCommands) Run(_ context.Context, c osupdate.Command) ([]byte, error) {
	n.t.Errorf("ran %s", c)
	return nil, nil
}

// An OS change the host's updater cannot apply (an osImageURL on a Debian
// host) is refused before the first write: the node is Degraded with the
// fields and the updater named, and nothing ran.
func TestOSChangeTheHostCannotApplyIsRefused(t *testing.T) {
	sch, _ := fuzzCodecs()
	plan := fuzzPlan(fuzzFrom, fuzzTo, true, true, rebootAction)
	target := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: fuzzTo, Labels: map[string]string{ndpmcv1.RenderedForLabel: "worker"}},
		Spec:   mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(fuzzToIgn)}, OSImageURL: "quay.io/example/os@sha256:2"},
		Status: ndpmcv1.MachineConfigStatus{PostConfigActions: []ndpmcv1.PostConfigActions{plan}}}
	r := newFuzzRig(t, sch, target, fuzzTo, nil)
	hostRoot := t.TempDir()
	for p, content := range map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/apt-get": "", "usr/bin/dpkg": ""} {
		if err := os.MkdirAll(filepath.Join(hostRoot, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostRoot, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.d.OS = osupdate.ConfigUpdater{Root: hostRoot, Runner: noCommands{t}}
	if _, err := r.d.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := r.k8s.Get(context.Background(), client.ObjectKey{Name: fuzzNode}, &node); err != nil {
		t.Fatal(err)
	}
	state, reason := node.Annotations[ndpmcv1.StateAnnotation], node.Annotations[ndpmcv1.ReasonAnnotation]
	if state != ndpmcv1.StateDegraded || !strings.Contains(reason, "the config changes osImageURL, which the apt updater of this host (/etc/os-release ID=debian") {
		t.Fatalf("state %q, reason %q", state, reason)
	}
	if len(r.sd.calls) > 0 || r.reboots.n > 0 {
		t.Errorf("ran %q, %d reboots", r.sd.calls, r.reboots.n)
	}
	for p := range hostFiles(t, r.root) {
		if !r.before[p] && !strings.HasPrefix(p, StateDir+"/") {
			t.Errorf("wrote %s", p)
		}
	}
	if got := hostFiles(t, r.root)[JournalPath]; got {
		t.Errorf("a journal was written for a refused update")
	}
}
