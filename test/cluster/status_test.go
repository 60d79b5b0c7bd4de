package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// The shape of `ndp status -o json` this test reads (cmd/ndp StatusReport).
type statusJSON struct {
	Pools []struct {
		Name                    string `json:"name"`
		Target                  string `json:"target"`
		Paused                  bool   `json:"paused"`
		MaxUnavailable          string `json:"maxUnavailable"`
		MachineCount            int32  `json:"machineCount"`
		UpdatedMachineCount     int32  `json:"updatedMachineCount"`
		ReadyMachineCount       int32  `json:"readyMachineCount"`
		UnavailableMachineCount int32  `json:"unavailableMachineCount"`
		DegradedMachineCount    int32  `json:"degradedMachineCount"`
		Conditions              []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
		Nodes []statusNodeJSON `json:"nodes"`
	} `json:"pools"`
}

type statusNodeJSON struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Desired string `json:"desired"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Phase   string `json:"phase"`
	Step    string `json:"step"`
	Plan    *struct {
		From    string   `json:"from"`
		To      string   `json:"to"`
		Actions []string `json:"actions"`
		Drain   bool     `json:"drain"`
		Reboot  bool     `json:"reboot"`
	} `json:"plan,omitempty"`
}

func statusCond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// statusMCN writes a node's MachineConfigNode as ndp-daemon would.
func statusMCN(t *testing.T, node, pool, current, desired string, conds ...map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": node},
		"spec": map[string]any{"node": map[string]any{"name": node}, "pool": map[string]any{"name": pool},
			"configVersion": map[string]any{"desired": desired}},
	}}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigNode"))
	create(t, u)
	list := make([]any, 0, len(conds))
	for _, c := range conds {
		list = append(list, c)
	}
	u.Object["status"] = map[string]any{"configVersion": map[string]any{"current": current, "desired": desired}, "conditions": list}
	if err := k8s.Status().Update(context.Background(), u); err != nil {
		t.Fatalf("MachineConfigNode %s status: %v", node, err)
	}
}

// A pool rolling out a chronyd restart, with one node done, one draining
// behind a pod and one degraded, shown by the real kubectl running ndp as
// its plugin.
func TestKubectlNdpStatus(t *testing.T) {
	ctx := context.Background()
	const pool = "ndpstatus"
	role := "node-role.kubernetes.io/" + pool
	dir := testkit.KubectlNdp(t)

	spec := chronySpec()
	spec.PoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"ndp.dev/test": pool}}
	create(t, newPolicy(pool+"-chrony", spec))
	waitCondition(t, pool+"-chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	mu := intstr.FromInt32(2)
	create(t, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool, Labels: map[string]string{"ndp.dev/test": pool}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: pool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
			MaxUnavailable:        &mu,
		}})
	create(t, sourceMC("00-"+pool+"-base", pool).WithFile("/etc/kubernetes/kubelet.conf", "base").Build())
	a := waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 2 }).Spec.Configuration.Name
	create(t, sourceMC("50-"+pool+"-chrony", pool).WithFile("/etc/chrony.conf", "pool ntp.example.com").Build())
	b := waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name

	// The nodes, already sent to b (so the rollout controller leaves them
	// be), as their daemons report them.
	reason := fmt.Sprintf("step action 1 (Restart chronyd.service) of the update to %s failed: restart chronyd.service: job failed (result exit-code); the previous files are restored", b)
	nodes := []struct{ name, current, state, reason string }{
		{pool + "-done", b, ndpmcv1.StateDone, ""},
		{pool + "-drain", a, ndpmcv1.StateWorking, ""},
		{pool + "-degraded", a, ndpmcv1.StateDegraded, reason},
	}
	for _, n := range nodes {
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{role: ""},
			Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: n.current, ndpmcv1.DesiredConfigAnnotation: b, ndpmcv1.StateAnnotation: n.state}}}
		if n.reason != "" {
			nd.Annotations[ndpmcv1.ReasonAnnotation] = n.reason
		}
		create(t, nd)
		// A patch: the rollout controller may write the node meanwhile.
		base := nd.DeepCopy()
		nd.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := k8s.Status().Patch(ctx, nd, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	stray := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pool + "-stray"}}
	create(t, stray)
	statusMCN(t, pool+"-done", pool, b, b,
		statusCond("UpdatePrepared", "True", "PlanVerified", ""), statusCond("UpdateComplete", "True", "Complete", ""),
		statusCond("Updated", "True", "Updated", "the node runs "+b), statusCond("NodeDegraded", "False", "AsExpected", ""))
	statusMCN(t, pool+"-drain", pool, a, b,
		statusCond("UpdatePrepared", "True", "PlanVerified", ""), statusCond("NodeDegraded", "False", "AsExpected", ""),
		statusCond("Cordoned", "True", "Cordoned", "cordoned for the update"),
		statusCond("Drained", "Unknown", "WaitingForPods", "attempt 2: 1 pods still to evict (shop/web-0): Cannot evict pod as it would violate the pod's disruption budget."),
		statusCond("AppliedFiles", "False", "Pending", ""), statusCond("UpdatePostActionComplete", "False", "Pending", ""),
		statusCond("Uncordoned", "False", "Pending", ""), statusCond("UpdateComplete", "False", "Pending", ""))
	statusMCN(t, pool+"-degraded", pool, a, b,
		statusCond("UpdatePrepared", "True", "PlanVerified", ""), statusCond("UpdateExecuted", "False", "StepFailed", reason),
		statusCond("NodeDegraded", "True", "StepFailed", reason))

	// The plan controller writes the plan a -> b for the two nodes on a.
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 1 && ps[0].From == a })

	// The counts, as the pool status controller derives them; it rewrites
	// them from the nodes if it runs, and ndp status shows what is there.
	now := metav1.Now().UTC().Format(time.RFC3339)
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"machineCount": 3, "updatedMachineCount": 1, "readyMachineCount": 1, "unavailableMachineCount": 2, "degradedMachineCount": 1,
		"conditions": []any{
			map[string]any{"type": "Updated", "status": "False", "reason": "NodesNotUpdated", "lastTransitionTime": now},
			map[string]any{"type": "Updating", "status": "True", "reason": "Updating", "lastTransitionTime": now},
			map[string]any{"type": "Degraded", "status": "True", "reason": "Degraded", "message": "node " + pool + "-degraded", "lastTransitionTime": now},
		}}})
	if err := k8s.Status().Patch(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}

	plan := &struct {
		From    string   `json:"from"`
		To      string   `json:"to"`
		Actions []string `json:"actions"`
		Drain   bool     `json:"drain"`
		Reboot  bool     `json:"reboot"`
	}{From: a, To: b, Actions: []string{"Restart chronyd.service"}}
	wantNodes := []statusNodeJSON{
		{Name: pool + "-degraded", Current: a, Desired: b, State: "Degraded", Reason: reason, Phase: "Degraded", Step: "degraded: " + reason, Plan: plan},
		{Name: pool + "-done", Current: b, Desired: b, State: "Done", Phase: "Done", Step: "done"},
		{Name: pool + "-drain", Current: a, Desired: b, State: "Working", Phase: "Draining", Step: "draining (waiting for pods: shop/web-0)", Plan: plan},
	}

	// -o json: the pool as the API server has it at that moment (read
	// before and after, unchanged in between), and the nodes.
	var last string
	testkit.Until(t, "kubectl ndp status -o json shows the pool's status and nodes", func() bool {
		var before, after mcfgv1.MachineConfigPool
		if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &before); err != nil {
			return false
		}
		out, errOut, code := kubectlPlugin(t, dir, "ndp", "status", "-o", "json")
		if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &after); err != nil {
			return false
		}
		last = fmt.Sprintf("exit %d\n%s\n%s", code, out, errOut)
		var r statusJSON
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || before.ResourceVersion != after.ResourceVersion || before.Status.MachineCount != 3 {
			return false
		}
		strayShown := false
		for _, p := range r.Pools {
			if p.Name == "(none)" {
				for _, n := range p.Nodes {
					strayShown = strayShown || (n.Name == stray.Name && n.Phase == "Pending" && n.Plan == nil)
				}
			}
		}
		for _, p := range r.Pools {
			if p.Name != pool {
				continue
			}
			st := after.Status
			conds := map[string]string{}
			for _, c := range p.Conditions {
				conds[c.Type] = c.Status
			}
			same := len(p.Conditions) == len(st.Conditions)
			for _, c := range st.Conditions {
				same = same && conds[string(c.Type)] == string(c.Status)
			}
			if d := cmp.Diff(wantNodes, p.Nodes); d != "" {
				last += "\nnodes (-want +got):\n" + d
				return false
			}
			return same && strayShown && p.Target == b && !p.Paused && p.MaxUnavailable == "2" &&
				p.MachineCount == st.MachineCount && p.UpdatedMachineCount == st.UpdatedMachineCount && p.ReadyMachineCount == st.ReadyMachineCount &&
				p.UnavailableMachineCount == st.UnavailableMachineCount && p.DegradedMachineCount == st.DegradedMachineCount && p.DegradedMachineCount == 1
		}
		return false
	})
	if t.Failed() {
		t.Log(last)
	}

	// Text: the pool's row, its nodes' rows, the plan and the whole reason.
	short := func(name string) string { return strings.TrimPrefix(name, "rendered-"+pool+"-")[:8] }
	var out string
	testkit.Until(t, "kubectl ndp status "+pool+" prints the rows expected", func() bool {
		var p mcfgv1.MachineConfigPool
		if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
			return false
		}
		stdout, errOut, code := kubectlPlugin(t, dir, "ndp", "status", pool)
		out = fmt.Sprintf("exit %d\n%s%s", code, stdout, errOut)
		st := p.Status
		rows := map[string]string{}
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				rows[f[0]] = strings.Join(f, " ")
			}
		}
		poolRow := fmt.Sprintf("%s %s %d %d %d %d %d 2 false ", pool, short(b), st.MachineCount, st.UpdatedMachineCount, st.ReadyMachineCount,
			st.UnavailableMachineCount, st.DegradedMachineCount)
		return code == 0 && strings.HasPrefix(rows[pool], poolRow) && strings.Contains(rows[pool], "Degraded") &&
			strings.Contains(stdout, fmt.Sprintf("Pool %s, target %s:", pool, b)) &&
			rows[pool+"-done"] == fmt.Sprintf("%s-done %s %s Done done", pool, short(b), short(b)) &&
			rows[pool+"-drain"] == fmt.Sprintf("%s-drain %s %s Working draining (waiting for pods: shop/web-0)", pool, short(a), short(b)) &&
			strings.HasPrefix(rows[pool+"-degraded"], fmt.Sprintf("%s-degraded %s %s Degraded degraded: step action 1", pool, short(a), short(b))) &&
			strings.Contains(stdout, fmt.Sprintf("  %s -> %s: Restart chronyd.service (2 nodes)\n", short(a), short(b))) &&
			strings.Contains(stdout, fmt.Sprintf("  %s-degraded: degraded: %s\n", pool, reason)) &&
			!strings.Contains(stdout, stray.Name)
	})
	if t.Failed() {
		t.Log(out)
	}

	// Errors: an unknown pool is exit 1, through kubectl.
	if _, errOut, code := kubectlPlugin(t, dir, "ndp", "status", "no-such-pool"); code != 1 || !strings.Contains(errOut, `MachineConfigPool "no-such-pool" not found`) {
		t.Errorf("unknown pool: exit %d, %s", code, errOut)
	}
}
