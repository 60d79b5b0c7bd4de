package clusterdiff

import (
	"context"
	"errors"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

// plan fills a group's plans: the MCO's decision and ndp's plan beside it
// (with the entries that would give ndp's), or ndp's plan alone.
func (d *differ) plan(ctx context.Context, g *Group, pool *mcfgv1.MachineConfigPool, from, to *machineconfig.Config, objects func(string) []string) error {
	var ndp *planner.Plan
	if d.planner != nil {
		p, err := d.planner.Plan(ctx, planner.Request{From: from, To: to, Pool: pool.Name, PoolLabels: pool.Labels, SingleNode: d.single})
		if err != nil {
			return err
		}
		ndp = p
	}
	if d.opts.Mode == ModeNDP {
		if ndp == nil {
			return errors.New("no policy is in force")
		}
		g.Plan = ndpPlan(ndp, objects)
		return nil
	}
	dec, err := mcorules.Decide(mcorules.Input{From: from, To: to, Policies: d.mcoPolicy, SingleNode: d.single, Overrides: d.overrides})
	if err != nil {
		return err
	}
	g.Plan = mcoPlan(dec, objects)
	if ndp == nil {
		return nil
	}
	np := ndpPlan(ndp, objects)
	g.NDP = &np
	if rank(np.Effect) >= rank(g.Plan.Effect) || len(ndp.Unreconcilable) > 0 {
		return nil
	}
	res, err := mcoentries.ForUpdate(mcoentries.Update{From: from, To: to, Plan: ndp, SingleNode: d.single, Overrides: d.overrides}, d.entries)
	if err != nil {
		return err
	}
	g.Entries, g.EntriesExact = entriesOf(res.Entries), res.Equal
	return nil
}

func ndpPlan(p *planner.Plan, objects func(string) []string) Plan {
	out := Plan{By: "ndp", Actions: []string{}, Drain: p.Drain, Reboot: p.Reboot, Changes: []Change{}}
	for _, a := range p.Actions {
		out.Actions = append(out.Actions, planner.FormatActions([]policy.Action{a}))
	}
	for _, u := range p.Unreconcilable {
		out.Refused = append(out.Refused, u.String())
	}
	for _, r := range p.Reasons {
		rule := r.Policy
		if r.Match != "" {
			rule += " (" + r.Match + ")"
		}
		c := Change{Change: r.Change, Rule: rule, Actions: []string{}, Objects: objects(r.ChangeID)}
		for _, a := range r.Actions {
			c.Actions = append(c.Actions, planner.FormatActions([]policy.Action{a}))
		}
		out.Changes = append(out.Changes, c)
	}
	out.Effect = effect(out.Refused, out.Reboot, out.Drain, out.Actions)
	return out
}

func mcoPlan(dec *mcorules.Decision, objects func(string) []string) Plan {
	out := Plan{By: "MCO", Actions: []string{}, Drain: dec.Drain, Reboot: dec.Reboot, Refused: dec.Refused, Changes: []Change{}}
	if dec.Error != "" {
		out.Refused = append(out.Refused, "the MCO's daemon fails the update: "+dec.Error)
	}
	for _, a := range dec.Actions {
		out.Actions = append(out.Actions, a.String())
	}
	for _, r := range dec.Rules {
		c := Change{Change: r.Change, Rule: r.Rule, Actions: []string{}, Objects: objects(changeID(r.Change))}
		for _, a := range r.Actions {
			c.Actions = append(c.Actions, a.String())
		}
		out.Changes = append(out.Changes, c)
	}
	out.Effect = effect(out.Refused, out.Reboot, out.Drain, out.Actions)
	return out
}

// changeID is the render's source key of one of the MCO's changes ("file
// /etc/x" → "file:/etc/x").
func changeID(change string) string {
	for _, p := range []string{"file", "unit"} {
		if rest, ok := strings.CutPrefix(change, p+" "); ok {
			return p + ":" + rest
		}
	}
	return "os:" + change
}

// objectsOf names where a change comes from: the MachineConfig that gives
// it in the new rendering (or, for a removal, gave it in the old), after
// the objects a generated one is rendered from ("KubeletConfig max-pods →
// MachineConfig 99-worker-generated-kubelet").
func (d *differ) objectsOf(id string, to, from map[string]string) []string {
	name := to[id]
	if name == "" {
		name = from[id]
	}
	if name == "" {
		return nil
	}
	s := "MachineConfig " + name
	if owners := d.gen.owners[name]; len(owners) > 0 {
		s = strings.Join(owners, ", ") + " → " + s
	} else if e, ok := d.after.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name}); ok {
		if ref := metav1.GetControllerOf(e.Object); ref != nil {
			s = ref.Kind + " " + ref.Name + " → " + s
		}
	}
	return []string{s}
}

func entriesOf(e mcoentries.Entries) []MCOEntry {
	var out []MCOEntry
	for subject, actions := range mcoentries.BySubject(e) {
		m := MCOEntry{Subject: mcoentries.SubjectText(subject)}
		for _, a := range actions {
			m.Actions = append(m.Actions, string(a.Type)+serviceOf(a))
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subject < out[j].Subject })
	return out
}

func serviceOf(a operatorv1.NodeDisruptionPolicySpecAction) string {
	switch {
	case a.Reload != nil:
		return " " + string(a.Reload.ServiceName)
	case a.Restart != nil:
		return " " + string(a.Restart.ServiceName)
	}
	return ""
}

// effect is a plan's effect constant.
func effect(refused []string, reboot, drain bool, actions []string) string {
	switch {
	case len(refused) > 0:
		return EffectUnreconcilable
	case reboot:
		return EffectReboot
	case drain:
		return EffectDrain
	}
	e := EffectNone
	for _, a := range actions {
		switch {
		case strings.HasPrefix(a, "Reboot"):
			return EffectReboot
		case strings.HasPrefix(a, "Drain"):
			e = worse(e, EffectDrain)
		case strings.HasPrefix(a, "Restart"):
			e = worse(e, EffectRestart)
		case strings.HasPrefix(a, "Reload"), strings.HasPrefix(a, "Special"), strings.HasPrefix(a, "DaemonReload"):
			e = worse(e, EffectReload)
		}
	}
	return e
}

var effectRank = map[string]int{EffectNone: 0, EffectReload: 1, EffectRestart: 2, EffectDrain: 3, EffectReboot: 4, EffectUnreconcilable: 5}

func rank(e string) int { return effectRank[e] }

// worse is the more disruptive of two effects.
func worse(a, b string) string {
	if rank(b) > rank(a) {
		return b
	}
	return a
}
