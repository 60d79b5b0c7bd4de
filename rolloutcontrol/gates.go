package rolloutcontrol

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// AlertsResult is what an alert source (Prometheus' /api/v1/alerts,
// Alertmanager's /api/v2/alerts) returned, or why it could not be asked.
type AlertsResult struct {
	Alerts []Alert
	Err    error
}

// Sample is one sample of a query's instant vector (a scalar is one sample
// without labels).
type Sample struct {
	Labels map[string]string
	Value  float64
}

// QueryResult is what the gate's PromQL query returned, or why it failed.
type QueryResult struct {
	Samples []Sample
	Err     error
}

// PodsResult are the pods the blocking-pod gate's selector matched (the
// caller lists them by the selector; they are checked again here), the
// labels of their namespaces (for namespaceSelector), or why they could not
// be listed.
type PodsResult struct {
	Pods            []*corev1.Pod
	NamespaceLabels map[string]map[string]string
	Err             error
}

// GateResults are a policy's gates as the caller evaluated them. A gate
// the policy sets whose result is nil was not evaluated: it holds like an
// error (the caller has not asked yet).
type GateResults struct {
	PrometheusAlerts   *AlertsResult
	PrometheusQuery    *QueryResult
	AlertmanagerAlerts *AlertsResult
	BlockingPods       *PodsResult
}

// GateVerdict is what a policy's gates say.
type GateVerdict struct {
	// Hold are reasons that hold every start of the pool.
	Hold []Reason
	// NodeHold are reasons that hold one node's start (blocking pods of
	// scope Node), by node name.
	NodeHold map[string][]Reason
	// Warnings: gates that could not be evaluated and let starts go
	// (failOpen).
	Warnings []Reason
}

// Held says whether the gates hold the node's start.
func (v GateVerdict) Held(node string) bool { return len(v.Hold) > 0 || len(v.NodeHold[node]) > 0 }

// EvaluateGates combines a policy's evaluated gates: any gate that says no
// holds; a gate that could not be evaluated holds and says so, unless the
// policy fails open (then it is a warning).
func EvaluateGates(p *Policy, r GateResults) GateVerdict {
	v := GateVerdict{}
	g := p.Spec.Gates
	if g == nil {
		return v
	}
	failed := func(what string, err error) {
		rs := Reason{Kind: ReasonGateError, Policy: p.Name}
		if g.FailOpen {
			rs.Detail = fmt.Sprintf("%s: %v, not holding (failOpen=true)", what, err)
			v.Warnings = append(v.Warnings, rs)
			return
		}
		rs.Detail = fmt.Sprintf("%s: %v, holding (failOpen=false)", what, err)
		v.Hold = append(v.Hold, rs)
	}
	notAsked := fmt.Errorf("not evaluated yet")
	if pg := g.Prometheus; pg != nil {
		if p.alerts != nil {
			switch res := r.PrometheusAlerts; {
			case res == nil:
				failed("prometheus alerts", notAsked)
			case res.Err != nil:
				failed("prometheus unreachable", res.Err)
			default:
				v.Hold = append(v.Hold, alertReasons(p.Name, "", p.alerts.Select(res.Alerts))...)
			}
		}
		if pg.Query != "" {
			switch res := r.PrometheusQuery; {
			case res == nil:
				failed("prometheus query", notAsked)
			case res.Err != nil:
				failed("prometheus query failed", res.Err)
			default:
				if rs, ok := queryReason(p.Name, pg.Query, res.Samples); !ok {
					v.Hold = append(v.Hold, rs)
				}
			}
		}
	}
	if g.Alertmanager != nil {
		switch res := r.AlertmanagerAlerts; {
		case res == nil:
			failed("alertmanager alerts", notAsked)
		case res.Err != nil:
			failed("alertmanager unreachable", res.Err)
		default:
			v.Hold = append(v.Hold, alertReasons(p.Name, "alertmanager", p.amAlerts.Select(res.Alerts))...)
		}
	}
	if bp := g.BlockingPods; bp != nil {
		switch res := r.BlockingPods; {
		case res == nil:
			failed("blocking pods", notAsked)
		case res.Err != nil:
			failed("blocking pods could not be listed", res.Err)
		default:
			cluster, byNode := blockingPods(p, res)
			if bp.Scope == v1alpha1.BlockingPodsCluster {
				if len(cluster) > 0 {
					v.Hold = append(v.Hold, Reason{Kind: ReasonBlockingPod, Policy: p.Name, Detail: podsDetail(cluster, "")})
				}
			} else {
				for node, pods := range byNode {
					if v.NodeHold == nil {
						v.NodeHold = map[string][]Reason{}
					}
					v.NodeHold[node] = append(v.NodeHold[node], Reason{Kind: ReasonBlockingPod, Policy: p.Name, Node: node, Detail: podsDetail(pods, node)})
				}
			}
		}
	}
	return v
}

// queryReason: a query whose result is empty or all zero lets starts go;
// else the reason names the first samples.
func queryReason(policy, query string, samples []Sample) (Reason, bool) {
	var bad []Sample
	for _, s := range samples {
		if s.Value != 0 || math.IsNaN(s.Value) {
			bad = append(bad, s)
		}
	}
	if len(bad) == 0 {
		return Reason{}, true
	}
	sort.SliceStable(bad, func(i, j int) bool { return labelString(bad[i].Labels, 0) < labelString(bad[j].Labels, 0) })
	shown := make([]string, 0, 3)
	for _, s := range bad[:min(3, len(bad))] {
		x := strconv.FormatFloat(s.Value, 'g', -1, 64)
		if l := labelString(s.Labels, 3); l != "" {
			x += " (" + l + ")"
		}
		shown = append(shown, x)
	}
	d := fmt.Sprintf("query %s is not zero: %s", query, strings.Join(shown, ", "))
	if len(bad) > 3 {
		d += fmt.Sprintf(" and %d more", len(bad)-3)
	}
	return Reason{Kind: ReasonQuery, Policy: policy, Detail: d}, false
}

// blockingPods are the listed pods that block: matched by the selectors,
// not finished; all of them, and those on a node by node.
func blockingPods(p *Policy, res *PodsResult) (all []*corev1.Pod, byNode map[string][]*corev1.Pod) {
	byNode = map[string][]*corev1.Pod{}
	for _, pod := range res.Pods {
		if pod == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if !p.pods.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if p.podNamespaces != nil && !p.podNamespaces.Matches(labels.Set(res.NamespaceLabels[pod.Namespace])) {
			continue
		}
		all = append(all, pod)
		if pod.Spec.NodeName != "" {
			byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], pod)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].Namespace+"/"+all[i].Name < all[j].Namespace+"/"+all[j].Name
	})
	return all, byNode
}

func podsDetail(pods []*corev1.Pod, node string) string {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	d := fmt.Sprintf("blocking pod %s/%s", pods[0].Namespace, pods[0].Name)
	if node != "" {
		d += " on node " + node
	}
	if len(pods) > 1 {
		d += fmt.Sprintf(" and %d more", len(pods)-1)
	}
	return d
}
