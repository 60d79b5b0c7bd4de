package advisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
)

// Forecast bounds.
const (
	// ForecastHistory is how many forecasts that are no longer pending
	// (superseded or completed) are kept per pool, the newest.
	ForecastHistory = 10
	// maxForecastNodes bounds the node names one forecast lists (its
	// nodeCount counts them all).
	maxForecastNodes = 1000
	// maxForecastList and maxForecastText are the API's bounds on a
	// forecast's lists of actions and rules and on a rule's texts.
	maxForecastList = 1000
	maxForecastText = 4096
)

// ToSource values of a forecast.
const (
	toPredicted = "predicted"
	toRendered  = "rendered"
)

// forecastNode is one node of the pool: the config it runs and the one the
// MCO's node controller sent it to (machineconfiguration.openshift.io/
// currentConfig and desiredConfig).
type forecastNode struct {
	Name, Current, Desired string
}

// forecastInput is everything one pool's forecasts are computed from,
// read from the API server by the forecast controller.
type forecastInput struct {
	Pool       string
	PoolLabels map[string]string
	// Target is where nodes not yet sent go: the rendering ndp predicts
	// (the MCO's name for it), else the pool's spec.configuration.name.
	Target string
	// Rendered is the pool's spec.configuration.name.
	Rendered string
	// Predicted is ndp's in-memory rendering of the pool, as the MCO's
	// render controller will render it; nil when it failed.
	Predicted *machineconfig.Config
	// Configs are the rendered MachineConfigs that exist in the cluster,
	// parsed, by name (those the nodes run and are sent to); ConfigErrs
	// the ones that could not be read or parsed.
	Configs    map[string]*machineconfig.Config
	ConfigErrs map[string]error
	Nodes      []forecastNode

	Policies     mcorules.Policies
	PolicySource mcorules.PolicySource
	// Overrides are MachineConfiguration cluster's irreconcilable
	// validation overrides (mcorules.OverridesOf).
	Overrides  operatorv1.IrreconcilableValidationOverrides
	SingleNode bool

	// Decide is the MCO's decision (mcorules.Decide); Plan ndp's plan with
	// the active policy set (an error when the set is not ready).
	Decide func(mcorules.Input) (*mcorules.Decision, error)
	Plan   func(req planner.Request) (*planner.Plan, error)
}

// ForecastName is the forecast of pool's nodes moving from → to:
// "<pool>-<from hash>-<to hash>" when both are the pool's rendered configs
// (rendered-<pool>-<hash>), which is what a person compares with `oc get
// mc`; any other pair, or one that would not fit in 253 characters, is
// "<pool>-<digest of pool, from and to>". Equal input, equal name: a
// restarted controller finds its forecasts again.
func ForecastName(pool, from, to string) string {
	prefix := "rendered-" + pool + "-"
	f, okf := strings.CutPrefix(from, prefix)
	t, okt := strings.CutPrefix(to, prefix)
	if okf && okt && f != "" && t != "" {
		name := pool + "-" + f + "-" + t
		if len(validation.IsDNS1123Subdomain(name)) == 0 {
			return name
		}
	}
	sum := sha256.Sum256([]byte(pool + "\x00" + from + "\x00" + to))
	digest := hex.EncodeToString(sum[:16])
	p := pool
	if max := validation.DNS1123SubdomainMaxLength - len(digest) - 1; len(p) > max {
		p = strings.TrimRight(p[:max], ".-")
	}
	return p + "-" + digest
}

// wantForecasts computes the pool's pending forecasts: one per pair (the
// config nodes run, the config they go to). A node the MCO has sent
// (desiredConfig other than its currentConfig) goes to its desiredConfig;
// a node not sent yet goes to the pool's target. Conditions carry no
// times: mergeForecasts keeps those of the stored objects.
func wantForecasts(in forecastInput) []v1alpha1.UpdateForecast {
	type pair struct{ from, to string }
	nodes := map[pair][]string{}
	for _, n := range in.Nodes {
		if n.Current == "" {
			continue // a node that has not booted a config yet
		}
		to := in.Target
		if n.Desired != "" && n.Desired != n.Current {
			to = n.Desired
		}
		if to == "" || to == n.Current {
			continue
		}
		p := pair{n.Current, to}
		nodes[p] = append(nodes[p], n.Name)
	}
	pairs := make([]pair, 0, len(nodes))
	for p := range nodes {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].from != pairs[j].from {
			return pairs[i].from < pairs[j].from
		}
		return pairs[i].to < pairs[j].to
	})
	out := make([]v1alpha1.UpdateForecast, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, forecastOne(in, p.from, p.to, nodes[p]))
	}
	return out
}

// forecastOne is the forecast of names moving from → to.
func forecastOne(in forecastInput, from, to string, names []string) v1alpha1.UpdateForecast {
	sort.Strings(names)
	f := v1alpha1.UpdateForecast{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.UpdateForecastKind},
		ObjectMeta: metav1.ObjectMeta{Name: ForecastName(in.Pool, from, to)},
		Spec:       v1alpha1.UpdateForecastSpec{Pool: in.Pool, From: from, To: to},
		Status: v1alpha1.UpdateForecastStatus{
			State:      v1alpha1.ForecastPending,
			NodeCount:  int32(len(names)),
			Nodes:      names[:min(len(names), maxForecastNodes)],
			SingleNode: in.SingleNode,
			Conditions: []metav1.Condition{},
		},
	}
	st := &f.Status
	fromCfg, fromErr := in.config(from, false)
	toCfg, toErr := in.config(to, true)
	if _, ok := in.Configs[to]; ok {
		st.ToSource = toRendered
	} else if toErr == nil {
		st.ToSource = toPredicted
	}
	if err := errors.Join(fromErr, toErr); err != nil {
		reason := "ConfigNotFound"
		var ie *machineconfig.InputError
		if errors.As(err, &ie) {
			reason = "InvalidConfig"
		}
		setForecastCondition(st, v1alpha1.ForecastConditionMCOPredicted, false, reason, err.Error())
		setForecastCondition(st, v1alpha1.ForecastConditionNDPPlanned, false, reason, err.Error())
		setForecastReady(st)
		return f
	}

	// The MCO's decision.
	src := in.PolicySource
	st.MCO = &v1alpha1.MCOForecast{PolicySource: &v1alpha1.MCOPolicySource{From: src.From, Generation: src.Generation, ObservedGeneration: src.ObservedGeneration, Stale: src.Stale}}
	if d, err := in.Decide(mcorules.Input{From: fromCfg, To: toCfg, Policies: in.Policies, SingleNode: in.SingleNode, Overrides: in.Overrides}); err != nil {
		st.MCO = nil
		setForecastCondition(st, v1alpha1.ForecastConditionMCOPredicted, false, "DecisionFailed", err.Error())
	} else {
		fillMCO(st.MCO, d)
		reason, msg := "Predicted", fmt.Sprintf("with the MCO's policies from MachineConfiguration cluster's %s", src.From)
		switch {
		case src.From == "defaults":
			msg = "with the MCO's default policies: there is no MachineConfiguration cluster"
		case src.Stale:
			reason = "PredictedFromSpec"
			msg = fmt.Sprintf("MachineConfiguration cluster's status is stale (generation %d, observed %d): predicted with its spec merged with the MCO's defaults, as its operator will write them; until then the MCO's daemon waits and marks the node Degraded", src.Generation, src.ObservedGeneration)
		}
		setForecastCondition(st, v1alpha1.ForecastConditionMCOPredicted, true, reason, msg)
	}

	// ndp's plan with the active NodeDisruptionPolicies.
	plan, err := in.Plan(planner.Request{From: fromCfg, To: toCfg, Pool: in.Pool, PoolLabels: in.PoolLabels, SingleNode: in.SingleNode})
	var notReady *policyset.NotReadyError
	switch {
	case errors.As(err, &notReady):
		setForecastCondition(st, v1alpha1.ForecastConditionNDPPlanned, false, "PoliciesNotReady", err.Error())
	case err != nil:
		setForecastCondition(st, v1alpha1.ForecastConditionNDPPlanned, false, "PlanFailed", err.Error())
	default:
		st.NDP = ndpForecast(plan)
		setForecastCondition(st, v1alpha1.ForecastConditionNDPPlanned, true, "Planned", "with policy revision "+plan.PolicyRevision)
	}
	setForecastReady(st)
	return f
}

// config is the parsed rendered config name: the cluster's, else (for a
// target) ndp's prediction when it has that name.
func (in forecastInput) config(name string, target bool) (*machineconfig.Config, error) {
	if c, ok := in.Configs[name]; ok {
		return c, nil
	}
	if target && in.Predicted != nil && in.Predicted.Name == name {
		return in.Predicted, nil
	}
	if err := in.ConfigErrs[name]; err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("MachineConfig %q not found", name)
}

func fillMCO(m *v1alpha1.MCOForecast, d *mcorules.Decision) {
	m.Refused = d.Refused[:min(len(d.Refused), 100)]
	m.Drain, m.Reboot = d.Drain, d.Reboot
	m.Actions = mcoActions(d.Actions)
	for _, r := range d.Rules[:min(len(d.Rules), maxForecastList)] {
		m.Rules = append(m.Rules, v1alpha1.MCORule{Change: conditions.Truncate(r.Change, maxForecastText), Rule: conditions.Truncate(r.Rule, maxForecastText),
			Actions: mcoActions(r.Actions), Detail: conditions.Truncate(r.Detail, maxForecastText)})
	}
	m.Error = conditions.Truncate(d.Error, maxForecastText)
	switch {
	case len(d.Refused) > 0:
		m.Summary = "Refused"
		return
	case d.Error != "":
		m.Summary = "Fails"
		return
	}
	m.Summary = summarizeActions(m.Actions, m.Drain)
}

func mcoActions(as []mcorules.Action) []v1alpha1.ForecastAction {
	if len(as) == 0 {
		return nil
	}
	out := make([]v1alpha1.ForecastAction, 0, min(len(as), maxForecastList))
	for _, a := range as[:min(len(as), maxForecastList)] {
		out = append(out, v1alpha1.ForecastAction{Type: string(a.Type), Service: a.Service})
	}
	return out
}

func ndpActions(as []policy.Action) []v1alpha1.ForecastAction {
	if len(as) == 0 {
		return nil
	}
	out := make([]v1alpha1.ForecastAction, 0, min(len(as), maxForecastList))
	for _, a := range as[:min(len(as), maxForecastList)] {
		fa := v1alpha1.ForecastAction{Type: string(a.Type)}
		switch {
		case a.Reload != nil:
			fa.Service = string(a.Reload.ServiceName)
		case a.Restart != nil:
			fa.Service = string(a.Restart.ServiceName)
		}
		out = append(out, fa)
	}
	return out
}

func ndpForecast(p *planner.Plan) *v1alpha1.NDPForecast {
	n := &v1alpha1.NDPForecast{Actions: ndpActions(p.Actions), Drain: p.Drain, Reboot: p.Reboot, PolicyRevision: p.PolicyRevision}
	for _, u := range p.Unreconcilable[:min(len(p.Unreconcilable), 100)] {
		n.Unreconcilable = append(n.Unreconcilable, u.String())
	}
	for _, r := range p.Reasons[:min(len(p.Reasons), maxForecastList)] {
		n.Rules = append(n.Rules, v1alpha1.NDPRule{Change: conditions.Truncate(r.Change, maxForecastText), Policy: r.Policy, Match: conditions.Truncate(r.Match, maxForecastText),
			Actions: ndpActions(r.Actions), Detail: conditions.Truncate(r.Detail, maxForecastText)})
	}
	n.Summary = summarizeActions(n.Actions, n.Drain)
	if len(n.Unreconcilable) > 0 {
		n.Summary = "Unreconcilable"
	}
	return n
}

// summarizeActions writes actions on one line, as `ndp status` does: "drain,
// Reboot", "Restart chronyd.service", "None"; "-" for none at all.
func summarizeActions(as []v1alpha1.ForecastAction, drain bool) string {
	var parts []string
	if drain {
		parts = append(parts, "drain")
	}
	for _, a := range as {
		s := a.Type
		if a.Service != "" {
			s += " " + a.Service
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "-"
	}
	return conditions.Truncate(strings.Join(parts, ", "), 1024)
}

func setForecastCondition(st *v1alpha1.UpdateForecastStatus, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: conditions.Message(msg)})
}

// setForecastReady sums the forecast up: Ready when the MCO's decision and
// ndp's plan are both there, else the first that is not, with its reason.
func setForecastReady(st *v1alpha1.UpdateForecastStatus) {
	for _, typ := range []string{v1alpha1.ForecastConditionMCOPredicted, v1alpha1.ForecastConditionNDPPlanned} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status != metav1.ConditionTrue {
			setForecastCondition(st, v1alpha1.ForecastConditionReady, false, c.Reason, typ+": "+c.Message)
			return
		}
	}
	setForecastCondition(st, v1alpha1.ForecastConditionReady, true, "Forecast", "the MCO's decision and ndp's plan are current")
}

// forecastWrites is what the forecast controller writes for one pool.
type forecastWrites struct {
	// Apply are forecasts to create or whose status to write (the stored
	// object's metadata kept, for an update).
	Apply []v1alpha1.UpdateForecast
	// Delete names forecasts beyond the history.
	Delete []string
}

// mergeForecasts compares the wanted forecasts of a pool with the stored
// ones: a wanted one is written when it differs (its conditions keep their
// transition times); a stored one no longer wanted becomes history
// (Completed when no node of the pool runs its from, else Superseded,
// with its nodes as last seen), and history beyond keep, the oldest
// first, is deleted. nodes are the pool's nodes now; observed is what the
// nodes' NodeHistories say of each forecast by name (forecastObservations),
// written into pending and history forecasts alike; now stamps new
// condition transitions.
func mergeForecasts(wanted, stored []v1alpha1.UpdateForecast, nodes []forecastNode, observed map[string]*v1alpha1.ForecastObserved, keep int, now metav1.Time) forecastWrites {
	var w forecastWrites
	have := map[string]*v1alpha1.UpdateForecast{}
	for i := range stored {
		have[stored[i].Name] = &stored[i]
	}
	wantedNames := map[string]bool{}
	for _, f := range wanted {
		wantedNames[f.Name] = true
		old := have[f.Name]
		next := f.DeepCopy()
		setForecastCondition(&next.Status, forecastConditionCurrent, true, string(v1alpha1.ForecastPending), "nodes of the pool run from, and the pool moves to to")
		setObserved(&next.Status, observed[f.Name])
		if old != nil {
			next.ObjectMeta = *old.ObjectMeta.DeepCopy()
			next.Status.Conditions = keepTransitions(next.Status.Conditions, old.Status.Conditions, now)
			if old.Spec == next.Spec && equality.Semantic.DeepEqual(old.Status, next.Status) {
				continue
			}
		} else {
			next.Status.Conditions = keepTransitions(next.Status.Conditions, nil, now)
		}
		w.Apply = append(w.Apply, *next)
	}
	running := map[string]bool{}
	for _, n := range nodes {
		running[n.Current] = true
	}
	var history []*v1alpha1.UpdateForecast
	for i := range stored {
		f := &stored[i]
		if wantedNames[f.Name] {
			continue
		}
		if f.Status.State == v1alpha1.ForecastPending || f.Status.State == "" {
			f = f.DeepCopy()
			f.Status.State = v1alpha1.ForecastSuperseded
			msg := "the pool moves to another config now"
			if !running[f.Spec.From] {
				f.Status.State = v1alpha1.ForecastCompleted
				msg = "no node of the pool runs from any more"
			}
			old := f.Status.Conditions
			f.Status.Conditions = nil
			for _, c := range old {
				if c.Type != forecastConditionCurrent {
					f.Status.Conditions = append(f.Status.Conditions, c)
				}
			}
			setForecastCondition(&f.Status, forecastConditionCurrent, false, string(f.Status.State), msg)
			setObserved(&f.Status, observed[f.Name])
			f.Status.Conditions = keepTransitions(f.Status.Conditions, old, now)
			w.Apply = append(w.Apply, *f)
		} else if next := withObserved(f, observed[f.Name], now); next != nil {
			// History still learns how its nodes' updates went.
			w.Apply = append(w.Apply, *next)
		}
		history = append(history, f)
	}
	// The newest history first: by when it stopped being current.
	sort.SliceStable(history, func(i, j int) bool {
		ti, tj := historyTime(history[i]), historyTime(history[j])
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return history[i].Name < history[j].Name
	})
	for i := keep; i < len(history); i++ {
		w.Delete = append(w.Delete, history[i].Name)
	}
	if len(w.Delete) > 0 {
		gone := map[string]bool{}
		for _, n := range w.Delete {
			gone[n] = true
		}
		kept := w.Apply[:0]
		for _, f := range w.Apply {
			if !gone[f.Name] {
				kept = append(kept, f)
			}
		}
		w.Apply = kept
		sort.Strings(w.Delete)
	}
	return w
}

// withObserved is f with observed written, nil when that changes nothing.
func withObserved(f *v1alpha1.UpdateForecast, observed *v1alpha1.ForecastObserved, now metav1.Time) *v1alpha1.UpdateForecast {
	next := f.DeepCopy()
	setObserved(&next.Status, observed)
	next.Status.Conditions = keepTransitions(next.Status.Conditions, f.Status.Conditions, now)
	if equality.Semantic.DeepEqual(f.Status, next.Status) {
		return nil
	}
	return next
}

// forecastConditionCurrent is True while the forecast is pending, and
// turns False (reason Superseded or Completed) when it becomes history.
const forecastConditionCurrent = v1alpha1.ForecastConditionCurrent

func historyTime(f *v1alpha1.UpdateForecast) metav1.Time {
	if c := meta.FindStatusCondition(f.Status.Conditions, forecastConditionCurrent); c != nil {
		return c.LastTransitionTime
	}
	return f.CreationTimestamp
}

// keepTransitions gives each condition the transition time of the stored
// one when its status did not change, else now.
func keepTransitions(conds, stored []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(stored, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
