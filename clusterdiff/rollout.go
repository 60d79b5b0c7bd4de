package clusterdiff

import (
	"fmt"
	"reflect"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// rollout says how the pool's update would roll out now: beside the MCO,
// its own pacing (spec.paused, spec.maxUnavailable; RolloutPolicies hold
// nothing there); with ndp, the same budget and the pool's
// RolloutPolicies: held by a window, and the gates every step waits on.
func (d *differ) rollout(pool *mcfgv1.MachineConfigPool, pd *PoolDiff) *Rollout {
	out := &Rollout{}
	if budget, err := nodepool.MaxUnavailable(pool, pd.Nodes); err == nil {
		out.Pacing = fmt.Sprintf("at most %d node(s) at once (spec.maxUnavailable)", budget)
	}
	if pool.Spec.Paused {
		out.Held = "the pool is paused (spec.paused): nothing rolls out until it is unpaused"
	}
	pols := rolloutcontrol.PoliciesFor(pool, d.rollouts)
	if d.opts.Mode == ModeMCO || len(pols) == 0 || out.Held != "" {
		return out
	}
	var compiled []*rolloutcontrol.Policy
	for _, p := range pols {
		out.Policies = append(out.Policies, p.Name)
		c, err := rolloutcontrol.Compile(p)
		if err != nil {
			out.Held = fmt.Sprintf("RolloutPolicy %s does not compile (%v): it holds the pool", p.Name, err)
			return out
		}
		compiled = append(compiled, c)
		out.Gates = append(out.Gates, gatesOf(p)...)
	}
	var kinds rolloutcontrol.Kinds
	for _, g := range pd.Groups {
		kinds |= kindsOf(g.Plan)
	}
	out.Held = rolloutcontrol.WindowMessage(rolloutcontrol.CheckWindows(compiled, kinds, d.opts.Now), d.opts.Now)
	return out
}

// kindsOf is what a plan makes a node go through, as rollout windows read
// it.
func kindsOf(p Plan) rolloutcontrol.Kinds {
	pc := ndpmcv1.PostConfigActions{Drain: p.Drain, Reboot: p.Reboot}
	for _, a := range p.Actions {
		switch {
		case strings.HasPrefix(a, "Restart"):
			pc.Actions = append(pc.Actions, ndpmcv1.PlanAction{Type: ndpmcv1.RestartAction})
		case strings.HasPrefix(a, "Reload"), strings.HasPrefix(a, "Special"):
			pc.Actions = append(pc.Actions, ndpmcv1.PlanAction{Type: ndpmcv1.ReloadAction})
		}
	}
	return rolloutcontrol.KindsOf(&pc)
}

// gatesOf names a RolloutPolicy's gates in words.
func gatesOf(p *v1alpha1.RolloutPolicy) []string {
	g := p.Spec.Gates
	if g == nil {
		return nil
	}
	var out []string
	add := func(ok bool, s string) {
		if ok {
			out = append(out, p.Name+": "+s)
		}
	}
	v := reflect.ValueOf(*g)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.IsZero() {
			add(true, lowerFirst(v.Type().Field(i).Name))
		}
	}
	return out
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
