package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

const exampleMachineConfiguration = "../../examples/machineconfiguration.yaml"

var (
	importOrigin = regexp.MustCompile(`\((the cluster at [^)]*|[^()]*machineconfiguration\.yaml)\)`)
	importLine   = regexp.MustCompile(` \(line \d+\)`)
)

// sameImport makes the output of an import from a file and from the
// cluster comparable: the report names its source, and lines only in a file.
func sameImport(s string) string {
	return importLine.ReplaceAllString(importOrigin.ReplaceAllString(s, "(SOURCE)"), "")
}

// `kubectl ndp import machineconfiguration cluster` reads the
// MachineConfiguration "cluster" from a real API server, which validates it
// with the MCO's own CRD, and prints what importing the example file
// prints; the real kubectl applies that and the policy controller accepts it.
func TestKubectlNdpImportMachineConfigurationFromTheCluster(t *testing.T) {
	ctx := context.Background()
	// A name no other test uses; the policy is gone from the active set
	// when the test ends (its priority 100 would decide /etc/chrony.conf
	// and the others' paths).
	const name = "ndp-import-test"
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl-ndp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ndp := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("ndp %v: %v\n%s", args, err, errOut.String())
		}
		return out.String(), errOut.String()
	}

	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "MachineConfiguration"})
	mc.SetName("cluster")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mc), mc.DeepCopy()); !apierrors.IsNotFound(err) {
		t.Fatalf("MachineConfiguration cluster before the test: %v, want NotFound", err)
	}

	// None yet: an error naming it.
	out, errOut, code := kubectlPlugin(t, dir, "ndp", "import", "machineconfiguration", "cluster")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "Error: the cluster at ") || !strings.Contains(errOut, ` has no MachineConfiguration "cluster"`) {
		t.Errorf("without a MachineConfiguration: exit %d, want 1 and an error naming it\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// Created through the API server: the MCO's CRD accepts it.
	t.Cleanup(func() {
		if err := k8s.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		testkit.Until(t, "MachineConfiguration cluster is gone", func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(mc), mc.DeepCopy()))
		})
	})
	if out, err := kubectl(t, "create", "-f", exampleMachineConfiguration); err != nil {
		t.Fatalf("kubectl create the example MachineConfiguration: %v\n%s", err, out)
	}

	// What the cluster gives is what the file gives: the same policy and
	// the same report, but for the source's name and the file's lines.
	fromCluster, reportCluster, code := kubectlPlugin(t, dir, "ndp", "import", "machineconfiguration", "cluster", "--name", name)
	if code != 0 {
		t.Fatalf("kubectl ndp import machineconfiguration cluster: exit %d\n%s", code, reportCluster)
	}
	if !strings.Contains(fromCluster, `# MachineConfiguration "cluster" (the cluster at `) {
		t.Errorf("the report does not name the cluster:\n%s", fromCluster)
	}
	fromFile, reportFile := ndp("import", "machineconfiguration", exampleMachineConfiguration, "--name", name)
	if testkit.WithoutCommentLines(fromCluster) != testkit.WithoutCommentLines(fromFile) || sameImport(fromCluster) != sameImport(fromFile) || sameImport(reportCluster) != sameImport(reportFile) {
		t.Errorf("the import from the cluster:\n%s\n%s\nis not the import of the file created:\n%s\n%s", fromCluster, reportCluster, fromFile, reportFile)
	}

	// kubectl apply -f -: accepted, and in force.
	t.Cleanup(func() {
		p := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := k8s.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		testkit.Until(t, name+" is deleted and out of the active set", func() bool {
			_, inForce := active.Get(name)
			return !inForce && apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, p))
		})
	})
	apply := exec.Command(kubectlBin, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(fromCluster)
	if out, err := apply.CombinedOutput(); err != nil || !strings.Contains(string(out), "nodedisruptionpolicy.ndp.dev/"+name+" created") {
		t.Fatalf("kubectl apply -f -: %v\n%s", err, out)
	}
	waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	if plan := chronyPlan(t); actionTypes(plan) != "Restart" || plan.Reasons[0].Policy != name {
		t.Errorf("/etc/chrony.conf is not planned by the imported policy: %+v", plan)
	}
}
