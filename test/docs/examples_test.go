package docs

import (
	"context"
	"fmt"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
	"github.com/ndp-dev/ndp/nodeconfig"
)

// The executor's example sessions, in the order a reader meets the state
// they need: one worker pool of three nodes (examples/cluster/worker-pool.yaml,
// held paused so that nothing rolls out until the rollout example), whose
// nodes this test moves to a new config as ndp-daemon would.
func TestExecutorExamples(t *testing.T) {
	sh := newShell(t)

	sh.must("kubectl apply -f examples/cluster/worker-pool.yaml")
	sh.must(`kubectl patch mcp worker --type merge -p '{"spec":{"paused":true}}'`)
	for _, mc := range []*ndpmcv1.MachineConfig{
		builder.MachineConfig("00-worker").WithRole("worker").WithOSImageURL("quay.io/os@sha256:1").WithFile("/etc/motd", "hello").Build(),
		builder.MachineConfig("01-worker-kubelet").WithRole("worker").WithOSImageURL("quay.io/os@sha256:1").WithFile(nodeconfig.KubeletConfPath, builder.WorkerKubeletConf).Build(),
	} {
		if err := k8s.Create(context.Background(), mc); err != nil {
			t.Fatal(err)
		}
	}
	// 00, 01 and the generated registries config.
	first := waitTarget(t, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 })
	for i := range 3 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("worker-%d", i),
			Labels:      map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: first, ndpmcv1.DesiredConfigAnnotation: first, ndpmcv1.StateAnnotation: "Done"}}}
		if err := k8s.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		// Ready, as its kubelet would say.
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := k8s.Status().Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}

	// chrony.conf added: the nodes wait for a plan, a reboot without a
	// policy that claims the file.
	sh.must("kubectl apply -f examples/cluster/50-worker-chrony.yaml")
	waitTarget(t, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 4 })
	settle(t)
	docexample.Check(t, root, "previews-whatif", sh.step)
	docexample.Check(t, root, "policies-get", sh.step)
	docexample.Check(t, root, "plan-in-status", sh.step)

	// The nodes run the target; the next change is previewed from it.
	setCurrent(t, waitTarget(t, nil))
	docexample.Check(t, root, "previews-chrony", sh.step)
	docexample.Check(t, root, "previews-disk", sh.step)
	docexample.Check(t, root, "previews-exfil", sh.step)

	sh.must("kubectl apply -f examples/policies/kubelet-live.yaml -f team-mirror.yaml")
	waitTarget(t, func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != first })
	settle(t)
	setCurrent(t, waitTarget(t, nil))
	settle(t)
	docexample.Check(t, root, "previews-generated", sh.step)
	docexample.Check(t, root, "kubeletconfig-preview", sh.step)
	docexample.Check(t, root, "clusteroperator", sh.step)

	// A rollout under way: chrony pointed at new servers, the pool
	// unpaused; worker-1 is done, one node runs its actions (as ndp-daemon
	// reports them) and one waits for its turn (maxUnavailable: 1).
	from := waitTarget(t, nil)
	sh.must("kubectl apply -f examples/cluster/50-worker-chrony-v2.yaml")
	to := waitTarget(t, func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != from })
	settle(t)
	daemon(t, "worker-1", to, to, ndpmcv1.StateDone, cond("UpdatePrepared", "True", "PlanVerified", ""),
		cond("UpdateComplete", "True", "Complete", ""), cond("Updated", "True", "Updated", "the node runs "+to))
	sh.must(`kubectl patch mcp worker --type merge -p '{"spec":{"paused":false}}'`)
	var updating string
	testkit.Eventually(t, "the rollout controller sends a node to "+to, func() (bool, string) {
		var nodes corev1.NodeList
		if err := k8s.List(context.Background(), &nodes, client.HasLabels{"node-role.kubernetes.io/worker"}); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			if n.Name != "worker-1" && n.Annotations[ndpmcv1.DesiredConfigAnnotation] == to {
				updating = n.Name
				return true, ""
			}
		}
		return false, "no node sent"
	})
	daemon(t, updating, from, to, ndpmcv1.StateWorking, cond("UpdatePrepared", "True", "PlanVerified", ""),
		cond("Drained", "True", "NotRequired", ""), cond("AppliedFiles", "True", "Applied", ""),
		cond("UpdatePostActionComplete", "Unknown", "Running", ""))
	testkit.Eventually(t, "the pool's status counts the rollout", func() (bool, string) {
		var p mcfgv1.MachineConfigPool
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "worker"}, &p); err != nil {
			return false, err.Error()
		}
		s := p.Status
		return s.ObservedGeneration == p.Generation && s.MachineCount == 3 && s.UpdatedMachineCount == 1 && s.UnavailableMachineCount == 1,
			fmt.Sprintf("%+v", s)
	})
	docexample.Check(t, root, "status", sh.step)
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// daemon writes what ndp-daemon reports of node: its annotations and its
// MachineConfigNode's status.
func daemon(t *testing.T, node, current, desired, state string, conds ...map[string]any) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err
		}
		n.Annotations[ndpmcv1.CurrentConfigAnnotation] = current
		n.Annotations[ndpmcv1.DesiredConfigAnnotation] = desired
		n.Annotations[ndpmcv1.StateAnnotation] = state
		return k8s.Update(ctx, &n)
	})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": node},
		"spec": map[string]any{"node": map[string]any{"name": node}, "pool": map[string]any{"name": "worker"},
			"configVersion": map[string]any{"desired": desired}},
	}}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigNode"))
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	list := make([]any, 0, len(conds))
	for _, c := range conds {
		list = append(list, c)
	}
	u.Object["status"] = map[string]any{"configVersion": map[string]any{"current": current, "desired": desired}, "conditions": list}
	if err := k8s.Status().Update(ctx, u); err != nil {
		t.Fatalf("MachineConfigNode %s status: %v", node, err)
	}
}

// step runs one command of an example and then waits until the
// controllers have acted on whatever it changed (settle), so that the next
// command sees what a reader's would.
func (s *shell) step(command string) string {
	s.t.Helper()
	out := s.run(command)
	settle(s.t)
	return out
}

// waitTarget waits until the worker pool's target is rendered and ok (nil:
// any) accepts the pool, and returns the target's name.
func waitTarget(t *testing.T, ok func(*mcfgv1.MachineConfigPool) bool) string {
	t.Helper()
	var p mcfgv1.MachineConfigPool
	testkit.Until(t, "the worker pool's target", func() bool {
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "worker"}, &p); err != nil || p.Spec.Configuration.Name == "" {
			return false
		}
		var mc ndpmcv1.MachineConfig
		return k8s.Get(context.Background(), client.ObjectKey{Name: p.Spec.Configuration.Name}, &mc) == nil && (ok == nil || ok(&p))
	})
	return p.Spec.Configuration.Name
}

// settle waits until every policy's current generation is accepted and
// active in this replica, and the worker pool's target holds a plan, made
// with the active policies, for each config its nodes run.
func settle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, "the policies and plans are current", func() (bool, string) {
		var pols v1alpha1.NodeDisruptionPolicyList
		if err := k8s.List(ctx, &pols); err != nil {
			return false, err.Error()
		}
		for _, p := range pols.Items {
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionAccepted)
			if p.DeletionTimestamp.IsZero() && (c == nil || c.ObservedGeneration != p.Generation || c.Status != metav1.ConditionTrue) {
				return false, "policy " + p.Name + " not accepted yet"
			}
		}
		planner := active.Planner()
		if planner == nil {
			return false, "no active policy set"
		}
		var pool mcfgv1.MachineConfigPool
		if err := k8s.Get(ctx, client.ObjectKey{Name: "worker"}, &pool); err != nil {
			return false, err.Error()
		}
		var target ndpmcv1.MachineConfig
		if err := k8s.Get(ctx, client.ObjectKey{Name: pool.Spec.Configuration.Name}, &target); err != nil {
			return false, err.Error()
		}
		var nodes corev1.NodeList
		if err := k8s.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/worker"}); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			from := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
			if from == target.Name {
				continue
			}
			if p := target.Status.PlanFrom(from); p == nil || p.PolicyRevision != planner.Engine.Revision() {
				return false, "no current plan " + from + " -> " + target.Name
			}
		}
		return true, ""
	})
}

// setCurrent plays ndp-daemon: every worker node now runs config.
func setCurrent(t *testing.T, config string) {
	t.Helper()
	testkit.SetNodeConfig(t, k8s, config, "worker-0", "worker-1", "worker-2")
}
