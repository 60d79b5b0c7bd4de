package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/planner"
)

// MCOEntriesReport is what ndp keeps in the MCO's node disruption policy
// (ndp-controller --mco-entries): its entries in MachineConfiguration
// cluster, and, per policy, what the MCO is not given and why.
type MCOEntriesReport struct {
	// Entries are ndp's entries (field manager ndp): "file /etc/chrony.conf:
	// Restart chronyd.service".
	Entries []MCOEntryReport `json:"entries"`
	// Policies are the policies' status.mco, by name.
	Policies []PolicyMCOReport `json:"policies"`
}

// MCOEntryReport is one of ndp's entries.
type MCOEntryReport struct {
	Subject string `json:"subject"`
	Actions string `json:"actions"`
	// PerUpdate: it stands for a pending update, behind the admission
	// guard (MachineConfiguration cluster's ndp.dev/update-entries).
	PerUpdate bool `json:"perUpdate,omitempty"`
}

// PolicyMCOReport is one policy's status.mco.
type PolicyMCOReport struct {
	Name string `json:"name"`
	v1alpha1.PolicyMCOStatus
}

// collectMCOEntries reads ndp's entries and the policies' reports; nil
// when ndp keeps none and no policy reports any (the switch is off, or
// this is not OpenShift).
func collectMCOEntries(ctx context.Context, c client.Reader, warn func(string)) (*MCOEntriesReport, error) {
	r := &MCOEntriesReport{Entries: []MCOEntryReport{}, Policies: []PolicyMCOReport{}}
	live, err := mcoentries.ReadLive(ctx, c)
	switch {
	case apierrors.IsForbidden(err):
		warn("cannot read MachineConfiguration cluster, ndp's entries in the MCO's policies are not shown: " + err.Error())
	case err != nil:
		return nil, err
	case live != nil:
		guarded := map[string]bool{}
		for _, s := range mcoentries.Guarded(live.MC) {
			guarded[s] = true
		}
		mine := live.Mine()
		for _, f := range mine.Files {
			r.Entries = append(r.Entries, MCOEntryReport{Subject: "file " + f.Path, Actions: planner.FormatActions(f.Actions), PerUpdate: guarded["file:"+f.Path]})
		}
		for _, u := range mine.Units {
			r.Entries = append(r.Entries, MCOEntryReport{Subject: "unit " + string(u.Name), Actions: planner.FormatActions(u.Actions), PerUpdate: guarded["unit:"+string(u.Name)]})
		}
		if len(mine.SSHKey.Actions) > 0 {
			r.Entries = append(r.Entries, MCOEntryReport{Subject: "sshkey", Actions: planner.FormatActions(mine.SSHKey.Actions), PerUpdate: guarded["sshkey"]})
		}
	}
	var pols v1alpha1.NodeDisruptionPolicyList
	switch err := c.List(ctx, &pols); {
	case err == nil:
		for _, p := range pols.Items {
			if p.Status.MCO != nil {
				r.Policies = append(r.Policies, PolicyMCOReport{Name: p.Name, PolicyMCOStatus: *p.Status.MCO})
			}
		}
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		warn("cannot list NodeDisruptionPolicies: " + err.Error())
	default:
		return nil, fmt.Errorf("listing NodeDisruptionPolicies: %w", err)
	}
	if len(r.Entries) == 0 && len(r.Policies) == 0 {
		return nil, nil
	}
	sort.Slice(r.Policies, func(i, j int) bool { return r.Policies[i].Name < r.Policies[j].Name })
	return r, nil
}

// writeMCOEntriesText prints the report after the pools.
func writeMCOEntriesText(b *strings.Builder, r *MCOEntriesReport) {
	if r == nil {
		return
	}
	b.WriteString("\nndp's entries in the MCO's node disruption policy (MachineConfiguration cluster, field manager ndp):\n")
	if len(r.Entries) == 0 {
		b.WriteString("  none\n")
	}
	for _, e := range r.Entries {
		kind := "static"
		if e.PerUpdate {
			kind = "per update, guarded"
		}
		fmt.Fprintf(b, "  %s: %s (%s)\n", e.Subject, e.Actions, kind)
	}
	var lines []string
	for _, p := range r.Policies {
		for _, n := range p.NotExpressed {
			lines = append(lines, fmt.Sprintf("  policy %s: not in the MCO: %s", p.Name, n))
		}
		for _, c := range p.Conflicts {
			lines = append(lines, fmt.Sprintf("  policy %s: %s", p.Name, c))
		}
	}
	if len(lines) > 0 {
		b.WriteString("What the MCO is not given:\n" + strings.Join(lines, "\n") + "\n")
	}
}
