package executor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// maxWarning keeps one pool's warning readable; the API server also caps
// the size of warnings.
const maxWarning = 1500

// Warning writes the preview as one admission warning, e.g.
//
//	pool worker, 3 nodes: Restart chronyd.service, no drain, no reboot (policy chrony)
//
// With nodes on several configs, each group gets its plan:
//
//	pool worker, 4 nodes: 3 nodes from rendered-worker-1a: Reboot, drains 3 nodes, reboots 3 nodes (policy default); 1 node from ...
func (pp *PoolPreview) Warning() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %s, %s: ", pp.Pool, preview.Count(pp.Nodes, "node"))
	var parts []string
	switch {
	case pp.Unchanged && pp.Pending > 0:
		parts = append(parts, fmt.Sprintf("no change to the rendered config; %s still moving to it as already planned", preview.Count(pp.Pending, "node")))
	case pp.Unchanged:
		parts = append(parts, "no change to the rendered config, no node is updated")
	case len(pp.Groups) == 0:
		parts = append(parts, "new rendered config "+pp.Rendered+", no node to update")
	case len(pp.Groups) == 1 && pp.UpToDate == 0 && pp.Unconfigured == 0:
		parts = append(parts, planText(pp.Groups[0].Plan, pp.Groups[0].Nodes))
	default:
		for _, g := range pp.Groups {
			parts = append(parts, fmt.Sprintf("%s from %s: %s", preview.Count(g.Nodes, "node"), g.From, planText(g.Plan, g.Nodes)))
		}
	}
	if !pp.Unchanged && pp.UpToDate > 0 {
		parts = append(parts, fmt.Sprintf("%s already on %s", preview.Count(pp.UpToDate, "node"), pp.Rendered))
	}
	if pp.Unconfigured > 0 {
		parts = append(parts, fmt.Sprintf("%s with no current config, not planned", preview.Count(pp.Unconfigured, "node")))
	}
	b.WriteString(strings.Join(parts, "; "))
	s := b.String()
	if len(s) > maxWarning {
		s = s[:maxWarning-3] + "..."
	}
	return s
}

// planText is "Restart chronyd.service, no drain, no reboot (policy chrony)".
func planText(p *planner.Plan, nodes int) string {
	if len(p.Unreconcilable) > 0 {
		return "cannot be applied in place"
	}
	actions := planner.FormatActions(p.Actions)
	if len(p.Actions) == 1 && p.Actions[0].Type == "None" {
		actions = "no action"
	}
	drain, reboot := "no drain", "no reboot"
	if p.Drain {
		drain = "drains " + preview.Count(nodes, "node")
	}
	if p.Reboot {
		reboot = "reboots " + preview.Count(nodes, "node")
	}
	s := fmt.Sprintf("%s, %s, %s", actions, drain, reboot)
	pols, unclaimed := deciding(p)
	var why []string
	if len(pols) == 1 {
		why = append(why, "policy "+pols[0])
	} else if len(pols) > 1 {
		why = append(why, "policies "+strings.Join(pols, "; "))
	}
	if len(unclaimed) > 0 {
		// No policy claims these: the planner's safe fallback, a reboot.
		if len(unclaimed) > 3 {
			unclaimed = append(unclaimed[:3], fmt.Sprintf("%d more", len(unclaimed)-3))
		}
		why = append(why, "unclaimed: "+strings.Join(unclaimed, ", "))
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// deciding lists the policies whose claims decided the plan, in the order
// of its reasons, each with the reasons it gave ("kubelet-live: maxPods
// changed"), and the changes no policy claimed. The policy's own words say
// why before anything happens, which is what a preview is for.
func deciding(p *planner.Plan) (policies, unclaimed []string) {
	var order []string
	details := map[string][]string{}
	for _, r := range p.Reasons {
		if r.Policy == planner.NoPolicy {
			unclaimed = append(unclaimed, r.Change)
			continue
		}
		d, seen := details[r.Policy]
		if !seen {
			order = append(order, r.Policy)
		}
		if r.Detail != "" && !slices.Contains(d, r.Detail) {
			d = append(d, r.Detail)
		}
		details[r.Policy] = d
	}
	for _, pol := range order {
		if d := details[pol]; len(d) > 0 {
			pol += ": " + strings.Join(d, "; ")
		}
		policies = append(policies, pol)
	}
	return policies, unclaimed
}
