package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// clusterOptions find the cluster as kubectl does (see restConfig).
type clusterOptions struct {
	kubeconfig string
	context    string
	timeout    time.Duration
}

// addClusterFlags adds --kubeconfig, --context and --request-timeout; a
// scope, if any, starts their help ("with cluster: ").
func (o *clusterOptions) addClusterFlags(cmd *cobra.Command, scope string) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", scope+"path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", scope+"the kubeconfig context to use")
	f.DurationVar(&o.timeout, "request-timeout", 30*time.Second, scope+"how long to wait for each request to the API server (0: no limit)")
}

type statusOptions struct {
	clusterOptions
	output string
}

// newStatusClient connects to the cluster; the tests replace it.
var newStatusClient = func(o *statusOptions) (client.Reader, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	s := scheme.New()
	s.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.MachineConfigNode{}, &mcfgv1.MachineConfigNodeList{})
	return client.New(cfg, client.Options{Scheme: s})
}

// restConfig loads the client configuration the way kubectl does:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the pod's
// service account. Run as a kubectl plugin, ndp gets only the environment.
func (o *clusterOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no cluster to talk to: set --kubeconfig or KUBECONFIG, or run in a pod")
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.Timeout = o.timeout
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "ndp-status " + rest.DefaultKubernetesUserAgent()
	return cfg, nil
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [POOL]... [-o text|json|yaml]",
		Short: "Show the rollout of each MachineConfigPool and, for each node, its config, its step and its plan",
		Long: `Show the rollout of each MachineConfigPool (target config, node counts, paused, maxUnavailable,
conditions) and, for each of its nodes, the config it runs and the one it is sent to, the node daemon's
state, the step it is at (from its MachineConfigNode conditions) and the plan it runs. Without POOL
arguments every pool is shown, each node under the one pool that manages it (master wins over
worker and a custom pool, a custom pool over worker), and nodes no pool manages under "(none)".
Under a pool that a RolloutPolicy selects or that has a node held (ndp hold), "Rollout:" lists the
policies and what holds its starts now and until when (the pool's RolloutHeld condition).

The cluster is found like kubectl finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster.
Exit codes: 0 shown; 1 no cluster reachable, an unknown pool or another error; 2 usage.`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.addClusterFlags(cmd, "")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func (o *statusOptions) run(cmd *cobra.Command, pools []string) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return usageError{fmt.Errorf("--output must be text, json or yaml, not %q", o.output)}
	}
	// controller-runtime's client logs through its global logger, which
	// would otherwise complain it was never set.
	ctrllog.SetLogger(logr.Discard())
	c, err := newStatusClient(o)
	if err != nil {
		return err
	}
	report, err := collectStatus(cmd.Context(), c, pools, func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "Warning: "+msg) })
	if err != nil {
		return err
	}
	return writeStatus(cmd.OutOrStdout(), report, o.output)
}

func writeStatus(w io.Writer, r *StatusReport, format string) error {
	if ok, err := writeDocument(w, r, format); ok {
		return err
	}
	return writeStatusText(w, r)
}

// collectStatus reads pools, nodes, MachineConfigNodes and the plans of
// the configs nodes move to. With names, only those pools.
func collectStatus(ctx context.Context, c client.Reader, names []string, warn func(string)) (*StatusReport, error) {
	var poolList mcfgv1.MachineConfigPoolList
	if err := c.List(ctx, &poolList); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, errors.New("the cluster has no MachineConfigPool API (machineconfiguration.openshift.io/v1): is ndp installed?")
		}
		return nil, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	var nodeList corev1.NodeList
	if err := c.List(ctx, &nodeList); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	mcns := map[string]*mcfgv1.MachineConfigNode{}
	var mcnList mcfgv1.MachineConfigNodeList
	switch err := c.List(ctx, &mcnList); {
	case err == nil:
		for i := range mcnList.Items {
			mcns[mcnList.Items[i].Name] = &mcnList.Items[i]
		}
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		// No MachineConfigNode API: steps come from the annotations alone.
	case apierrors.IsForbidden(err):
		warn("cannot list MachineConfigNodes, steps are shown from node annotations only: " + err.Error())
	default:
		return nil, fmt.Errorf("listing MachineConfigNodes: %w", err)
	}

	forecasts, err := listForecasts(ctx, c, warn)
	if err != nil {
		return nil, err
	}
	policies, err := listRolloutPolicies(ctx, c, warn)
	if err != nil {
		return nil, err
	}

	pools := poolList.Items
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for n := range want {
		found := false
		for i := range pools {
			found = found || pools[i].Name == n
		}
		if !found {
			return nil, fmt.Errorf("MachineConfigPool %q not found", n)
		}
	}
	nodes := nodeList.Items
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })

	configs := &configCache{c: c, got: map[string]*ndpmcv1.MachineConfig{}}
	report := &StatusReport{Pools: []PoolReport{}}
	// Each node is shown in the one pool that manages it (its primary
	// pool), as the controllers count it; a node no pool may manage (two
	// custom pools) is shown in none, with a warning.
	all := make([]*mcfgv1.MachineConfigPool, len(pools))
	for i := range pools {
		all[i] = &pools[i]
	}
	membership := nodepool.NewPools(all)
	primary := map[string]string{}
	for j := range nodes {
		p, err := membership.Primary(&nodes[j])
		if err != nil {
			warn(err.Error())
			continue
		}
		if p != nil {
			primary[nodes[j].Name] = p.Name
		}
	}
	for i := range pools {
		p := &pools[i]
		if len(want) > 0 && !want[p.Name] {
			continue
		}
		pr := poolReport(p)
		for j := range nodes {
			if primary[nodes[j].Name] != p.Name {
				continue
			}
			nr, err := nodeReport(ctx, &nodes[j], mcns[nodes[j].Name], p.Spec.Configuration.Name, p.Spec.Paused, configs)
			if err != nil {
				return nil, err
			}
			pr.Nodes = append(pr.Nodes, nr)
		}
		pr.Forecasts = forecasts[p.Name]
		if pr.Forecasts == nil {
			pr.Forecasts = []ForecastReport{}
		}
		var held []string
		for j := range nodes {
			if _, ok := nodes[j].Annotations[v1alpha1.HoldAnnotation]; ok && primary[nodes[j].Name] == p.Name {
				held = append(held, nodes[j].Name)
			}
		}
		pr.Rollout = rolloutReport(p, policies, held)
		report.Pools = append(report.Pools, pr)
	}
	if len(want) == 0 {
		none := PoolReport{Name: NoPool, Conditions: []ConditionReport{}, Nodes: []NodeReport{}, Forecasts: []ForecastReport{}}
		for j := range nodes {
			if primary[nodes[j].Name] != "" {
				continue
			}
			nr, err := nodeReport(ctx, &nodes[j], mcns[nodes[j].Name], "", false, configs)
			if err != nil {
				return nil, err
			}
			none.Nodes = append(none.Nodes, nr)
		}
		if len(none.Nodes) > 0 {
			none.MachineCount = int32(len(none.Nodes))
			report.Pools = append(report.Pools, none)
		}
	}
	if report.MCOEntries, err = collectMCOEntries(ctx, c, warn); err != nil {
		return nil, err
	}
	return report, nil
}

func poolReport(p *mcfgv1.MachineConfigPool) PoolReport {
	pr := PoolReport{
		Name:                    p.Name,
		Target:                  p.Spec.Configuration.Name,
		Paused:                  p.Spec.Paused,
		MaxUnavailable:          maxUnavailableString(p),
		MachineCount:            p.Status.MachineCount,
		UpdatedMachineCount:     p.Status.UpdatedMachineCount,
		ReadyMachineCount:       p.Status.ReadyMachineCount,
		UnavailableMachineCount: p.Status.UnavailableMachineCount,
		DegradedMachineCount:    p.Status.DegradedMachineCount,
		Conditions:              []ConditionReport{},
		Nodes:                   []NodeReport{},
		Forecasts:               []ForecastReport{},
	}
	for _, c := range p.Status.Conditions {
		pr.Conditions = append(pr.Conditions, ConditionReport{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return pr
}

func nodeReport(ctx context.Context, n *corev1.Node, mcn *mcfgv1.MachineConfigNode, target string, paused bool, configs *configCache) (NodeReport, error) {
	a := n.Annotations
	f := nodeFacts{
		current: a[ndpmcv1.CurrentConfigAnnotation], desired: a[ndpmcv1.DesiredConfigAnnotation],
		state: a[ndpmcv1.StateAnnotation], reason: a[ndpmcv1.ReasonAnnotation],
		target: target, paused: paused,
	}
	f.heldReason, f.held = a[v1alpha1.HoldAnnotation]
	if mcn != nil {
		f.hasMCN = true
		f.conditions = mcn.Status.Conditions
		if mcn.Status.ConfigVersion != nil {
			f.mcnDesired = mcn.Status.ConfigVersion.Desired
		}
	}
	nr := NodeReport{Name: n.Name, Current: f.current, Desired: f.desired, State: f.state, Reason: f.reason}
	nr.Phase, nr.Step = deriveStep(f)
	// The plan under way, or the one a node waiting for its turn will run.
	to := ""
	switch {
	case f.current == "":
	case f.desired != "" && f.desired != f.current:
		to = f.desired
	case nr.Phase == PhaseQueued:
		to = f.target
	}
	if to != "" {
		mc, err := configs.get(ctx, to)
		if err != nil {
			return nr, err
		}
		if mc != nil {
			if p := mc.Status.PlanFrom(f.current); p != nil {
				nr.Plan = planReport(p, to)
			}
		}
	}
	return nr, nil
}

// configCache reads each rendered MachineConfig once; a missing one is nil.
type configCache struct {
	c   client.Reader
	got map[string]*ndpmcv1.MachineConfig
}

func (cc *configCache) get(ctx context.Context, name string) (*ndpmcv1.MachineConfig, error) {
	if mc, ok := cc.got[name]; ok {
		return mc, nil
	}
	mc := &ndpmcv1.MachineConfig{}
	if err := cc.c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading MachineConfig %s: %w", name, err)
		}
		mc = nil
	}
	cc.got[name] = mc
	return mc, nil
}

// listRolloutPolicies reads the RolloutPolicies; a cluster without the
// API (an older install) has none.
func listRolloutPolicies(ctx context.Context, c client.Reader, warn func(string)) ([]v1alpha1.RolloutPolicy, error) {
	var list v1alpha1.RolloutPolicyList
	switch err := c.List(ctx, &list); {
	case err == nil:
		return list.Items, nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		warn("cannot list RolloutPolicies, the pools' rollout policies are not shown: " + err.Error())
		return nil, nil
	default:
		return nil, fmt.Errorf("listing RolloutPolicies: %w", err)
	}
}

// rolloutReport is the pool's rollout policies and holds: nil when no
// policy selects it, no node of it is held and its RolloutHeld condition
// is not True.
func rolloutReport(p *mcfgv1.MachineConfigPool, policies []v1alpha1.RolloutPolicy, heldNodes []string) *RolloutReport {
	r := &RolloutReport{Policies: []string{}, Reasons: []string{}, HeldNodes: heldNodes}
	for _, pol := range rolloutcontrol.PoliciesFor(p, policies) {
		r.Policies = append(r.Policies, pol.Name)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == ndpmcv1.ConditionRolloutHeld && c.Status == corev1.ConditionTrue {
			r.Held = true
			if c.Message != "" {
				r.Reasons = strings.Split(c.Message, "; ")
			}
		}
	}
	if r.HeldNodes == nil {
		r.HeldNodes = []string{}
	}
	if len(r.Policies) == 0 && !r.Held && len(r.HeldNodes) == 0 {
		return nil
	}
	return r
}

// listForecasts reads the UpdateForecasts ndp's advisor writes, by pool:
// the pending first (by from and to), then the past ones, newest first.
// A cluster without the API (ndp not in advisor mode, an older install)
// has none.
func listForecasts(ctx context.Context, c client.Reader, warn func(string)) (map[string][]ForecastReport, error) {
	var list v1alpha1.UpdateForecastList
	switch err := c.List(ctx, &list); {
	case err == nil:
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		warn("cannot list UpdateForecasts, forecasts are not shown: " + err.Error())
		return nil, nil
	default:
		return nil, fmt.Errorf("listing UpdateForecasts: %w", err)
	}
	items := list.Items
	pending := func(f *v1alpha1.UpdateForecast) bool {
		return f.Status.State == v1alpha1.ForecastPending || f.Status.State == ""
	}
	since := func(f *v1alpha1.UpdateForecast) metav1.Time {
		if c := meta.FindStatusCondition(f.Status.Conditions, v1alpha1.ForecastConditionCurrent); c != nil {
			return c.LastTransitionTime
		}
		return f.CreationTimestamp
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		if pa, pb := pending(a), pending(b); pa != pb {
			return pa
		}
		if !pending(a) {
			if ta, tb := since(a), since(b); !ta.Equal(&tb) {
				return tb.Before(&ta)
			}
		}
		if a.Spec.From != b.Spec.From {
			return a.Spec.From < b.Spec.From
		}
		return a.Spec.To < b.Spec.To
	})
	out := map[string][]ForecastReport{}
	for i := range items {
		out[items[i].Spec.Pool] = append(out[items[i].Spec.Pool], forecastReport(&items[i]))
	}
	return out, nil
}

func forecastReport(f *v1alpha1.UpdateForecast) ForecastReport {
	s := f.Status
	r := ForecastReport{Name: f.Name, From: f.Spec.From, To: f.Spec.To, State: string(s.State), NodeCount: s.NodeCount, Nodes: s.Nodes}
	if r.State == "" {
		r.State = string(v1alpha1.ForecastPending)
	}
	if r.Nodes == nil {
		r.Nodes = []string{}
	}
	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.ForecastConditionReady); c != nil {
		r.Ready = ConditionReport{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	r.Observed = s.Observed
	if m := s.MCO; m != nil {
		side := &ForecastPlanReport{Actions: forecastActions(m.Actions), Drain: m.Drain, Reboot: m.Reboot, Refused: m.Refused, Error: m.Error, Rules: []ForecastRuleReport{}}
		for _, rule := range m.Rules {
			side.Rules = append(side.Rules, ForecastRuleReport{Change: rule.Change, By: rule.Rule, Actions: forecastActions(rule.Actions)})
		}
		if src := m.PolicySource; src != nil {
			side.Policies = src.From
			if src.Stale {
				side.Policies += fmt.Sprintf(" (stale: generation %d, observed %d)", src.Generation, src.ObservedGeneration)
			}
		}
		r.MCO = side
	}
	if n := s.NDP; n != nil {
		side := &ForecastPlanReport{Actions: forecastActions(n.Actions), Drain: n.Drain, Reboot: n.Reboot, Refused: n.Unreconcilable, Rules: []ForecastRuleReport{}, Policies: n.PolicyRevision}
		for _, rule := range n.Rules {
			by := "policy " + rule.Policy
			if rule.Policy == "(none)" {
				by = "no policy"
			}
			side.Rules = append(side.Rules, ForecastRuleReport{Change: rule.Change, By: by, Actions: forecastActions(rule.Actions)})
		}
		r.NDP = side
	}
	return r
}

func forecastActions(as []v1alpha1.ForecastAction) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		if a.Service != "" {
			out = append(out, a.Type+" "+a.Service)
			continue
		}
		out = append(out, a.Type)
	}
	return out
}
