package executor

import (
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// poolCounts are a pool's nodes by state: its status's machine counts and
// the ndp_pool_nodes metric.
type poolCounts struct {
	Total       int // the nodes the pool selects
	Updated     int // done (nodeDone) on the target
	Ready       int // updated and ready (nodeReady)
	Updating    int // sent to a config they do not run yet, or at work
	Unavailable int // not ready or not done (unavailable)
	Degraded    int // Degraded or Unreconcilable
}

// poolStatus is what the pool status controller writes.
type poolStatus struct {
	Counts poolCounts
	// Conditions are every condition of the pool, sorted by type; a
	// condition's lastTransitionTime moves only when its status does.
	Conditions []mcfgv1.MachineConfigPoolCondition
	// Configuration is status.configuration.name: the target once every
	// node runs it, else what the status said; "" leaves it unset.
	Configuration string
}

// calculatePoolStatus derives a pool's status from its nodes, its target
// MachineConfig (nil if it has none or it does not exist) and the
// conditions other controllers reported for it (PoolConditions): the
// machine counts, and the conditions Updated, Updating, NodeDegraded and
// Degraded (which sums up NodeDegraded, RenderDegraded, RegistriesDegraded,
// UnmanagedNodes, MCOPresent and an unreconcilable target). The pool's
// other conditions are kept as its status has them, but for those
// reported; now is the lastTransitionTime of a condition whose status
// changes.
func calculatePoolStatus(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig,
	reported map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition, now metav1.Time) poolStatus {
	s := summarize(pool, nodes, target)
	name := pool.Spec.Configuration.Name
	total := len(nodes)

	conds := map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition{}
	for _, c := range pool.Status.Conditions {
		conds[c.Type] = c
	}
	set := func(typ mcfgv1.MachineConfigPoolConditionType, ok bool, reason, msg string) {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		conds[typ] = mcfgv1.MachineConfigPoolCondition{Type: typ, Status: st, Reason: reason, Message: conditions.Message(msg)}
	}
	for typ, c := range reported {
		conds[typ] = c
	}
	set(ConditionPoolUpdated, s.updated == total && name != "", "AllNodesUpdated", fmt.Sprintf("all %d nodes run %s", total, name))
	if c := conds[ConditionPoolUpdated]; c.Status != corev1.ConditionTrue {
		c.Reason, c.Message = "NodesNotUpdated", fmt.Sprintf("%d of %d nodes run %s", s.updated, total, name)
		conds[ConditionPoolUpdated] = c
	}
	switch {
	case s.updated == total:
		set(ConditionPoolUpdating, false, "Idle", "")
	case pool.Spec.Paused:
		set(ConditionPoolUpdating, false, "Paused", fmt.Sprintf("paused with %d of %d nodes on %s", s.updated, total, name))
	default:
		set(ConditionPoolUpdating, true, "Updating", fmt.Sprintf("%d of %d nodes on %s; updating: %s", s.updated, total, name, names(s.updating)))
	}
	set(ConditionPoolNodeDegraded, len(s.degraded) > 0, "NodeDegraded", strings.Join(s.degraded, "; "))
	if len(s.degraded) == 0 {
		c := conds[ConditionPoolNodeDegraded]
		c.Reason, c.Message = "AsExpected", ""
		conds[ConditionPoolNodeDegraded] = c
	}
	var why []string
	for _, typ := range []mcfgv1.MachineConfigPoolConditionType{ConditionPoolNodeDegraded, mcfgv1.MachineConfigPoolRenderDegraded, ndpmcv1.ConditionRegistriesDegraded, ndpmcv1.ConditionUnmanagedNodes, ndpmcv1.ConditionMCOPresent} {
		if c, ok := conds[typ]; ok && c.Status == corev1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s: %s", typ, c.Message))
		}
	}
	if s.unreconcilable != "" {
		why = append(why, s.unreconcilable)
	}
	set(ConditionPoolDegraded, len(why) > 0, "Degraded", strings.Join(why, "; "))
	if len(why) == 0 {
		c := conds[ConditionPoolDegraded]
		c.Reason = "AsExpected"
		conds[ConditionPoolDegraded] = c
	}

	out := poolStatus{Counts: poolCounts{Total: total, Updated: s.updated, Ready: s.ready, Updating: len(s.updating), Unavailable: s.unavailable, Degraded: len(s.degraded)}}
	for _, typ := range sortedConditionTypes(conds) {
		c := conds[typ]
		c.LastTransitionTime = now
		for _, old := range pool.Status.Conditions {
			if old.Type == typ && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		out.Conditions = append(out.Conditions, c)
	}
	if name != "" && s.updated == total {
		out.Configuration = name
	} else {
		out.Configuration = pool.Status.Configuration.Name
	}
	return out
}

func sortedConditionTypes(m map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition) []mcfgv1.MachineConfigPoolConditionType {
	out := make([]mcfgv1.MachineConfigPoolConditionType, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// poolSummary is what a pool's nodes say about its rollout.
type poolSummary struct {
	updated, ready, unavailable int
	updating                    []*corev1.Node
	degraded                    []string // "node: reason"
	unreconcilable              string
}

func names(nodes []*corev1.Node) string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ", ")
}

func summarize(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig) poolSummary {
	var s poolSummary
	name := pool.Spec.Configuration.Name
	for _, n := range nodes {
		// The MCO's getUpdatedMachines and getReadyMachines.
		if name != "" && nodeDone(n) && n.Annotations[ndpmcv1.DesiredConfigAnnotation] == name {
			s.updated++
			if nodeReady(n) {
				s.ready++
			}
		}
		if unavailable(n) {
			s.unavailable++
		}
		if updating(n) {
			s.updating = append(s.updating, n)
		}
		// The MCO's getDegradedMachines, but for a node without a
		// desiredConfig: ndp's daemon reports Degraded before any (a
		// corrupt journal, a host it cannot adopt), the MCO's never does.
		if nodeDegraded(n) {
			s.degraded = append(s.degraded, fmt.Sprintf("node %s: %s", n.Name, n.Annotations[ndpmcv1.ReasonAnnotation]))
		}
	}
	sort.Strings(s.degraded)
	if target != nil {
		for _, c := range target.Status.Conditions {
			if c.Type == ndpmcv1.ConditionUnreconcilable && c.Status == metav1.ConditionTrue {
				s.unreconcilable = fmt.Sprintf("the plans to %s are unreconcilable: %s", target.Name, c.Message)
			}
		}
	}
	return s
}

// nodeReady is the Machine Config Operator's isNodeReady
// (LayeredNodeState.CheckNodeReady): Ready True, DiskPressure and
// NetworkUnavailable not anything but False, and schedulable. ndp is
// stricter in one case: a node without a Ready condition (a kubelet that
// never reported) is not ready; the MCO's loop finds nothing to object to
// and counts it ready.
func nodeReady(n *corev1.Node) bool {
	reported := false
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			if c.Status != corev1.ConditionTrue {
				return false
			}
			reported = true
		case corev1.NodeDiskPressure, corev1.NodeNetworkUnavailable:
			if c.Status != corev1.ConditionFalse {
				return false
			}
		}
	}
	return reported && !n.Spec.Unschedulable
}

// nodeDone is the MCO's LayeredNodeState.IsNodeDone: the node's daemon
// reported Done on its currentConfig, which is its desiredConfig, and
// neither annotation is missing.
func nodeDone(n *corev1.Node) bool {
	cur, desired := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation]
	_, granted := n.Annotations[v1alpha1.RebootGrantAnnotation] // a reboot it asked for, under way
	return cur != "" && cur == desired && n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone && !granted
}

// nodeDegraded: the node's daemon reports Degraded or Unreconcilable.
func nodeDegraded(n *corev1.Node) bool {
	state := n.Annotations[ndpmcv1.StateAnnotation]
	return state == ndpmcv1.StateDegraded || state == ndpmcv1.StateUnreconcilable
}

// updating: the node was sent to a config it does not run yet, or its
// daemon is at work.
func updating(n *corev1.Node) bool {
	cur, desired := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation]
	_, granted := n.Annotations[v1alpha1.RebootGrantAnnotation]
	return (desired != "" && desired != cur) || n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateWorking || granted
}

// unavailable is the MCO's LayeredNodeState.IsUnavailableForUpdate: not
// ready (nodeReady), or not done (nodeDone: updating, degraded, a daemon
// that has not reported, an annotation missing). One deliberate
// difference: the MCO counts a Ready node whose daemon failed on a config
// other than its current one (IsNodeMCDFailing) as available, so that it
// can be retargeted; ndp counts every failed node against the budget, so
// that a bad config stops spreading, and retargets it all the same
// (decideRollout's Redirect).
func unavailable(n *corev1.Node) bool {
	return !nodeReady(n) || !nodeDone(n)
}
