package rolloutcontrol

import (
	"strings"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// Kinds is a set of plan kinds (v1alpha1.PlanKind): what a plan makes a
// node go through, or what a window holds.
type Kinds uint8

const (
	KindReboot Kinds = 1 << iota
	KindDrain
	KindRestart
	KindReload
	KindDaemonReload
	KindNone

	// KindAll is every kind.
	KindAll = KindReboot | KindDrain | KindRestart | KindReload | KindDaemonReload | KindNone
	// KindDisruptive is what a window holds when its holds are unset.
	KindDisruptive = KindReboot | KindDrain
)

var kindNames = []struct {
	k    Kinds
	name v1alpha1.PlanKind
	verb string // "plans that ..."
}{
	{KindReboot, v1alpha1.PlanReboot, "reboot"},
	{KindDrain, v1alpha1.PlanDrain, "drain"},
	{KindRestart, v1alpha1.PlanRestart, "restart a unit"},
	{KindReload, v1alpha1.PlanReload, "reload a unit"},
	{KindDaemonReload, v1alpha1.PlanDaemonReload, "reload systemd"},
	{KindNone, v1alpha1.PlanNone, "only write files"},
}

// KindsOf is what a plan makes a node go through. A nil plan (a node that
// adopts the target, or runs it) is None.
func KindsOf(p *ndpmcv1.PostConfigActions) Kinds {
	if p == nil {
		return KindNone
	}
	var k Kinds
	if p.Reboot {
		k |= KindReboot
	}
	if p.Drain {
		k |= KindDrain
	}
	for _, a := range p.Actions {
		switch a.Type {
		case ndpmcv1.PackageUpdateAction:
			// It may reboot, drained, or restart services: the host
			// says which once its packages are updated, so a window
			// holds it as what it may do.
			k |= KindReboot | KindDrain | KindRestart
		case ndpmcv1.RebootAction:
			k |= KindReboot
		case ndpmcv1.RestartAction:
			k |= KindRestart
		case ndpmcv1.ReloadAction:
			k |= KindReload
		case ndpmcv1.DaemonReloadAction:
			k |= KindDaemonReload
		}
	}
	if k == 0 {
		k = KindNone
	}
	return k
}

// holdsKinds is what a window's holds field holds: unset, plans that reboot
// or drain; [All], every plan.
func holdsKinds(holds []v1alpha1.PlanKind) Kinds {
	if len(holds) == 0 {
		return KindDisruptive
	}
	var k Kinds
	for _, h := range holds {
		if h == v1alpha1.PlanAll {
			return KindAll
		}
		for _, n := range kindNames {
			if n.name == h {
				k |= n.k
			}
		}
	}
	return k
}

// String lists the kinds by their API names: "Reboot, Drain".
func (k Kinds) String() string {
	var s []string
	for _, n := range kindNames {
		if k&n.k != 0 {
			s = append(s, string(n.name))
		}
	}
	return strings.Join(s, ", ")
}

// Phrase is the kinds as the messages say them: "plans that reboot or
// drain"; every kind: "every plan".
func (k Kinds) Phrase() string {
	if k == KindAll {
		return "every plan"
	}
	var s []string
	for _, n := range kindNames {
		if k&n.k != 0 {
			s = append(s, n.verb)
		}
	}
	switch len(s) {
	case 0:
		return "no plan"
	case 1:
		return "plans that " + s[0]
	}
	return "plans that " + strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
