package mco

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/clusterdiff"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// TestDiffLiveThroughKubectl runs `kubectl ndp diff` as a CI job's service
// account would, against a live API server where the MCO's controllers
// run: the account holds only the ClusterRole ndp-diff of ndp's install
// (get and list), the plugin is found by the real kubectl, and the new
// rendered config it names is the one the MCO then creates.
func TestDiffLiveThroughKubectl(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	m := startMCOWith(t, mcoOptions{Kubectl: true})
	ctx := context.Background()
	var role rbacv1.ClusterRole
	data, err := os.ReadFile("../../manifests/rbac/diff/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	const ns, account = "ci", "ndp-diff"
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account}},
		&role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ci-ndp-diff"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: account}}},
	} {
		if err := m.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	kubeconfig, cfg := m.tokenKubeconfig(t, ns, account)
	as, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the CI account bound to ndp-diff", func() (bool, string) {
		err := as.List(ctx, &mcfgv1.MachineConfigPoolList{})
		return err == nil, fmt.Sprint(err)
	})
	// The account may read, and nothing more.
	probe := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if err := as.Create(ctx, probe); err == nil {
		t.Fatal("the ndp-diff account could create a pool")
	}

	manifest, err := filepath.Abs("../../examples/diff/pull-request/50-worker-chrony.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plugins := testkit.KubectlNdp(t)
	cmd := exec.Command(m.Kubectl, "ndp", "diff", "-f", manifest, "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("kubectl ndp diff: %v (want exit 1: a pool changes)\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	var r clusterdiff.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the report: %v\n%s", err, out)
	}
	var worker *clusterdiff.PoolDiff
	for i := range r.Pools {
		if r.Pools[i].Pool == "worker" {
			worker = &r.Pools[i]
		}
	}
	if r.Mode != clusterdiff.ModeMCO || !strings.HasPrefix(r.State, "live cluster https://") || worker == nil || !worker.Changed || !worker.ToExact {
		t.Fatalf("report: mode %s, state %q, worker %+v; want the MCO's mode, the live cluster, worker changing to an exact name", r.Mode, r.State, worker)
	}
	if len(worker.Groups) == 0 || worker.Groups[0].Plan.Effect != clusterdiff.EffectReboot {
		t.Errorf("worker's plan %+v: want the MCO's reboot (no policy for /etc/chrony.conf)", worker.Groups)
	}

	// Applied, the MCO renders the config the diff named.
	apply := exec.Command(m.Kubectl, "apply", "-f", manifest)
	apply.Env = append(os.Environ(), "KUBECONFIG="+m.Kubeconfig)
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, b)
	}
	var pool mcfgv1.MachineConfigPool
	testkit.Eventually(t, "pool worker rendered anew", func() (bool, string) {
		if err := m.Client.Get(ctx, client.ObjectKey{Name: "worker"}, &pool); err != nil {
			return false, err.Error()
		}
		return pool.Spec.Configuration.Name != worker.From, pool.Spec.Configuration.Name
	})
	if pool.Spec.Configuration.Name != worker.To {
		t.Errorf("the MCO rendered %s, the diff said %s", pool.Spec.Configuration.Name, worker.To)
	}
}
