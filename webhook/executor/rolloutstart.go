package executor

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// +kubebuilder:rbac:groups=ndp.dev,resources=rolloutpolicies,verbs=get;list;watch

// rolloutPolicies lists the RolloutPolicies that select the pool; a
// cluster without the API has none.
func rolloutPolicies(ctx context.Context, c client.Reader, pool *mcfgv1.MachineConfigPool) ([]*v1alpha1.RolloutPolicy, error) {
	var list v1alpha1.RolloutPolicyList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing RolloutPolicies: %w", err)
	}
	return rolloutcontrol.PoliciesFor(pool, list.Items), nil
}

// rolloutStart says when the preview's plans would start under the pool's
// RolloutPolicies' maintenance windows, at now, by the kinds of each
// plan: "would start: now", "would wait: outside the maintenance window,
// opens Sat 02:00 Europe/Berlin for plans that reboot"; with plans that
// differ, each with its nodes. "" when no policy selects the pool or
// nothing is planned. Gates and holds are evaluated when a node's turn
// comes, not here: the words say so when a policy has gates.
func rolloutStart(policies []*v1alpha1.RolloutPolicy, pp *PoolPreview, now time.Time) string {
	if len(policies) == 0 || pp.Unchanged || len(pp.Groups) == 0 {
		return ""
	}
	var compiled []*rolloutcontrol.Policy
	gates := false
	for _, pol := range policies {
		c, err := rolloutcontrol.Compile(pol)
		if err != nil {
			return "would wait: " + err.Error() + " (it holds the pool)"
		}
		compiled = append(compiled, c)
		gates = gates || pol.Spec.Gates != nil
	}
	var order []string
	nodes := map[string]int{}
	for _, g := range pp.Groups {
		if g.Plan == nil || len(g.Plan.Unreconcilable) > 0 {
			continue
		}
		pc := g.Plan.PostConfigActions()
		v := rolloutcontrol.CheckWindows(compiled, rolloutcontrol.KindsOf(&pc), now)
		s := "would start: now"
		if !v.Allowed {
			s = "would wait: " + strings.TrimPrefix(rolloutcontrol.WindowMessage(v, now), "waiting: ")
		}
		if _, ok := nodes[s]; !ok {
			order = append(order, s)
		}
		nodes[s] += g.Nodes
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, s := range order {
		if len(order) > 1 {
			verb, rest, _ := strings.Cut(s, ": ")
			s = fmt.Sprintf("%s for %s: %s", verb, preview.Count(nodes[s], "node"), rest)
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, "; ")
	if gates {
		s += " (if the rollout policies' gates allow)"
	}
	return s
}

// withStart appends the start to a pool's warning within maxWarning,
// shortening the plan's words rather than the start's.
func withStart(warning, start string) string {
	if start == "" {
		return warning
	}
	tail := "; " + start
	if len(tail) > maxWarning/2 {
		tail = tail[:maxWarning/2-3] + "..."
	}
	if len(warning)+len(tail) > maxWarning {
		warning = warning[:maxWarning-len(tail)-3] + "..."
	}
	return warning + tail
}
