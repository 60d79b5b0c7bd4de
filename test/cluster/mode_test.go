package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// ndp-controller --mode=auto, the shipped binary as a standby replica (this
// test process leads): without the Machine Config Operator it runs as the
// executor; when the MCO's ClusterOperator appears, it says so and exits
// (status 3) so that its Deployment restarts it; started again, it runs as
// the advisor, and exits again when the MCO goes. It exits for the change
// alone: not before its mode watch has looked at the MCO and said so, and
// naming the objects as the change left them.
func TestAutoModeRestartsWhenTheMCOComesOrGoes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ndp-controller")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ndp-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mco := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mco) })

	// run starts the process, waits for it to say its mode and that its
	// mode watch has looked, does change, and waits for it to exit, saying
	// it found found.
	run := func(wantMode, wantNext, found string, change func() error) {
		t.Helper()
		var logs output.Buffer
		cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--mode=auto",
			"--leader-election-namespace=default", "--metrics-bind-address=0",
			"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
			"--webhook-port=-1")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-exited
			}
			if t.Failed() {
				t.Logf("ndp-controller output:\n%s", logs.String())
			}
		}()
		testkit.Until(t, "ndp-controller decides its mode, "+wantMode+", and watches it", func() bool {
			select {
			case err := <-exited:
				t.Fatalf("ndp-controller exited before the MCO changed: %v", err)
			default:
			}
			return strings.Contains(logs.String(), `"msg":"mode decided at start (--mode=auto)"`) &&
				strings.Contains(logs.String(), `"mode":"`+wantMode+`"`) &&
				strings.Contains(logs.String(), `"msg":"watching the Machine Config Operator's presence (--mode=auto)`)
		})
		if err := change(); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-exited:
		case <-time.After(2 * time.Minute):
			t.Fatalf("ndp-controller did not exit when the MCO changed")
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("ndp-controller exited with %v, want status 3", err)
		}
		// Its verdict, when it decided to exit, was the one after the
		// change: an exit decided before (on its own) says the objects
		// as they were.
		if !strings.Contains(logs.String(), "exiting to restart as "+wantNext) || !strings.Contains(logs.String(), `"found":"`+found+`"`) {
			t.Errorf("ndp-controller does not say it exits to restart as %s, having found %s", wantNext, found)
		}
	}
	run("executor", "advisor", "ClusterOperator machine-config", func() error { return k8s.Create(ctx, mco.DeepCopy()) })
	run("advisor", "executor", "nothing", func() error { return client.IgnoreNotFound(k8s.Delete(ctx, mco)) })
}
