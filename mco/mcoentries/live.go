package mcoentries

import (
	"context"
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/mco/mcorules"
)

// Live is MachineConfiguration cluster as the API server holds it, with
// who owns which of its entries: what the entries controller, the
// NodeDisruptionPolicy preview and the observer each read.
type Live struct {
	MC   *operatorv1.MachineConfiguration
	Spec Entries
	Own  Ownership
	// Admin are the entries other managers own (the administrator's).
	Admin Entries
}

// ReadLive reads MachineConfiguration cluster with r, which must not strip
// managedFields (an API reader, not the manager's cache); nil when there is
// none, or the API server does not serve the kind.
func ReadLive(ctx context.Context, r client.Reader) (*Live, error) {
	var mc operatorv1.MachineConfiguration
	switch err := r.Get(ctx, client.ObjectKey{Name: MachineConfigurationName}, &mc); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading MachineConfiguration %s: %w", MachineConfigurationName, err)
	}
	own, err := OwnershipOf(&mc)
	if err != nil {
		return nil, err
	}
	spec := mc.Spec.NodeDisruptionPolicy
	return &Live{MC: &mc, Spec: spec, Own: own, Admin: Others(spec, own)}, nil
}

// Mine are the entries ndp owns now.
func (l *Live) Mine() Entries {
	var drop []string
	for _, s := range Subjects(l.Spec) {
		if !l.Own.Mine[s] {
			drop = append(drop, s)
		}
	}
	return Without(l.Spec, drop)
}

// UpdateEntries are ndp's per-update entries now standing: those of its
// entries the guard annotation lists.
func (l *Live) UpdateEntries() Entries {
	guarded := map[string]bool{}
	for _, s := range Guarded(l.MC) {
		guarded[s] = true
	}
	var drop []string
	for _, s := range Subjects(l.Spec) {
		if !l.Own.Mine[s] || !guarded[s] {
			drop = append(drop, s)
		}
	}
	return Without(l.Spec, drop)
}

// WithinLimits keeps of extra what the MCO's API takes beside base (its
// schema: 50 files, 50 units, 10 actions), dropping the last entries until
// it validates, and says what was dropped.
func WithinLimits(base, extra Entries) (Entries, []Unexpressed) {
	var dropped []Unexpressed
	for {
		err := mcorules.Validate(Merge(base, extra))
		if err == nil || Empty(extra) {
			return extra, dropped
		}
		subj := Subjects(extra)
		last := subj[len(subj)-1]
		dropped = append(dropped, Unexpressed{Subject: SubjectText(last), Reason: "the MCO's API refuses it beside the entries already there: " + err.Error()})
		extra = Without(extra, []string{last})
	}
}

// BySubject maps each subject of e ("file:/etc/x", "unit:y.service",
// "sshkey") to its actions.
func BySubject(e Entries) map[string][]operatorv1.NodeDisruptionPolicySpecAction {
	out := map[string][]operatorv1.NodeDisruptionPolicySpecAction{}
	for _, f := range e.Files {
		out["file:"+f.Path] = f.Actions
	}
	for _, u := range e.Units {
		out["unit:"+string(u.Name)] = u.Actions
	}
	if len(e.SSHKey.Actions) > 0 {
		out["sshkey"] = e.SSHKey.Actions
	}
	return out
}
