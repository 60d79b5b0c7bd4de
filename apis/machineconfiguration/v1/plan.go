package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	operatorv1 "github.com/openshift/api/operator/v1"
)

// PlanFrom returns the plan of the move from the named config, or nil.
func (s *MachineConfigStatus) PlanFrom(from string) *PostConfigActions {
	for i := range s.PostConfigActions {
		if s.PostConfigActions[i].From == from {
			return &s.PostConfigActions[i]
		}
	}
	return nil
}

// StandingPlan returns the stored plan of the move from the named config
// if it stands, or nil when a new one must be computed: a plan stands when
// it was made with the active policy revision, or when a node of the group
// has started executing it (a plan is never replaced under a running
// node). This is the other half of the plan rule (render.PlanGroups says
// which plans a pool needs); the plan controller and the webhook's what-if
// both decide with it.
func (s *MachineConfigStatus) StandingPlan(from, activeRevision string, updating bool) *PostConfigActions {
	stored := s.PlanFrom(from)
	if stored == nil || (!updating && stored.PolicyRevision != activeRevision) {
		return nil
	}
	return stored
}

// PlanHash digests what a node executes for the move from one config to
// another: the configs' names, the ordered actions, drain, reboot and the
// policy revision. The plan controller stores it with every plan; the node
// daemon recomputes it before executing anything.
func PlanHash(from, to string, actions []PlanAction, drain, reboot bool, policyRevision string) string {
	if actions == nil {
		actions = []PlanAction{}
	}
	b, _ := json.Marshal(struct {
		From           string       `json:"from"`
		To             string       `json:"to"`
		Actions        []PlanAction `json:"actions"`
		Drain          bool         `json:"drain"`
		Reboot         bool         `json:"reboot"`
		PolicyRevision string       `json:"policyRevision"`
	}{from, to, actions, drain, reboot, policyRevision}) // plain strings and bools always encode
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Hash is the plan's PlanHash for a move to the config named to.
func (p *PostConfigActions) Hash(to string) string {
	return PlanHash(p.From, to, p.Actions, p.Drain, p.Reboot, p.PolicyRevision)
}

// +kubebuilder:object:generate=false

// HashMismatchError is a stored plan whose planHash is not the digest of
// its own content: it was edited, or written by something else.
type HashMismatchError struct {
	From, To       string
	Stored, Actual string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("plan from %s to %s: planHash mismatch: stored %s, content hashes to %s", e.From, e.To, e.Stored, e.Actual)
}

// Verify checks the plan before a node executes it: its planHash matches
// its content for a move to the config named to, and its actions are ones
// a node can run.
func (p *PostConfigActions) Verify(to string) error {
	if actual := p.Hash(to); actual != p.PlanHash {
		return &HashMismatchError{From: p.From, To: to, Stored: p.PlanHash, Actual: actual}
	}
	return p.Validate()
}

// PackageUpdateAction is ndp's own action, beside openshift/api's: update
// the host's packages to what its package sources and pins now say (apt on
// Debian and Ubuntu, update_engine on Flatcar), then do what the host says
// the update needs. Alone, or without Reboot, the plan holds that answer
// ahead: reboot, cordoned and drained, where the host asks for a reboot
// (/var/run/reboot-required, needrestart's kernel), otherwise restart the
// services needrestart names. Before Reboot ([PackageUpdate, Reboot]) the
// plan reboots anyway, and the update runs before the reboot.
const PackageUpdateAction PlanActionType = "PackageUpdate"

// openshift/api's action types, as plans hold them.
const (
	RebootAction       = PlanActionType(operatorv1.RebootSpecAction)
	NoneAction         = PlanActionType(operatorv1.NoneSpecAction)
	ReloadAction       = PlanActionType(operatorv1.ReloadSpecAction)
	RestartAction      = PlanActionType(operatorv1.RestartSpecAction)
	DaemonReloadAction = PlanActionType(operatorv1.DaemonReloadSpecAction)
)

// serviceName is openshift/api's rule for the units of Reload and Restart.
var serviceName = regexp.MustCompile(`^[a-zA-Z0-9:._\\-]+\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$`)

// Validate checks the shape of a plan: known action types, each with the
// unit it needs; Reboot and None only alone, except that a PackageUpdate
// may come before the Reboot; PackageUpdate at most once and first; Reboot
// exactly when the reboot flag is set. Drain is a flag of the plan, never
// an action.
func (p *PostConfigActions) Validate() error {
	fail := func(i int, format string, args ...any) error {
		return fmt.Errorf("plan from %s: actions[%d]: %s", p.From, i, fmt.Sprintf(format, args...))
	}
	if len(p.Actions) == 0 {
		return fmt.Errorf("plan from %s: actions: empty (a plan with nothing to do is [None])", p.From)
	}
	rebootSeen := false
	for i, a := range p.Actions {
		switch a.Type {
		case RebootAction, NoneAction:
			alone := len(p.Actions) == 1
			if a.Type == RebootAction && len(p.Actions) == 2 && i == 1 && p.Actions[0].Type == PackageUpdateAction {
				alone = true
			}
			if !alone {
				return fail(i, "%s must be the only action (a Reboot may only follow a PackageUpdate)", a.Type)
			}
			rebootSeen = a.Type == RebootAction
		case PackageUpdateAction:
			if i != 0 {
				return fail(i, "PackageUpdate must be the first action: the packages are updated before any unit is restarted")
			}
		case DaemonReloadAction:
		case ReloadAction, RestartAction:
			svc := a.Reload
			if a.Type == RestartAction {
				svc = a.Restart
			}
			if svc == nil {
				return fail(i, "%s names no unit", a.Type)
			}
			if len(svc.ServiceName) > 255 || !serviceName.MatchString(svc.ServiceName) {
				return fail(i, "%s: invalid unit name %q", a.Type, svc.ServiceName)
			}
		default:
			return fail(i, "unknown action type %q", a.Type)
		}
		if (a.Reload != nil && a.Type != ReloadAction) || (a.Restart != nil && a.Type != RestartAction) {
			return fail(i, "%s carries a unit of another action type", a.Type)
		}
	}
	if rebootSeen != p.Reboot {
		return errors.New("plan from " + p.From + ": reboot is " + fmt.Sprint(p.Reboot) + " but the actions say otherwise")
	}
	return nil
}

// PlanActionsFrom converts planner (openshift/api) actions to the stored
// shape.
func PlanActionsFrom(as []operatorv1.NodeDisruptionPolicySpecAction) []PlanAction {
	out := make([]PlanAction, 0, len(as))
	for _, a := range as {
		pa := PlanAction{Type: PlanActionType(a.Type)}
		if a.Reload != nil {
			pa.Reload = &PlanService{ServiceName: string(a.Reload.ServiceName)}
		}
		if a.Restart != nil {
			pa.Restart = &PlanService{ServiceName: string(a.Restart.ServiceName)}
		}
		out = append(out, pa)
	}
	return out
}

// NodeDisruptionPolicyActions converts stored actions back to planner
// (openshift/api) actions.
func NodeDisruptionPolicyActions(as []PlanAction) []operatorv1.NodeDisruptionPolicySpecAction {
	out := make([]operatorv1.NodeDisruptionPolicySpecAction, 0, len(as))
	for _, a := range as {
		na := operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type)}
		if a.Reload != nil {
			na.Reload = &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(a.Reload.ServiceName)}
		}
		if a.Restart != nil {
			na.Restart = &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(a.Restart.ServiceName)}
		}
		out = append(out, na)
	}
	return out
}

// UpdatesPackages says whether the plan updates the host's packages.
func (p *PostConfigActions) UpdatesPackages() bool {
	return len(p.Actions) > 0 && p.Actions[0].Type == PackageUpdateAction
}

// RebootIfAsked says whether the plan reboots only where the host asks
// for it after its package update: a PackageUpdate without Reboot.
func (p *PostConfigActions) RebootIfAsked() bool {
	return p.UpdatesPackages() && !p.Reboot
}

// Disrupts says whether the plan may drain or reboot the node: what moves
// its pods (the rollout's taint and its Events are for those).
func (p *PostConfigActions) Disrupts() bool {
	return p.Drain || p.Reboot || p.RebootIfAsked()
}

// String is the action as administrators read it: "Restart chronyd.service".
func (a PlanAction) String() string {
	switch {
	case a.Reload != nil:
		return string(a.Type) + " " + a.Reload.ServiceName
	case a.Restart != nil:
		return string(a.Type) + " " + a.Restart.ServiceName
	}
	return string(a.Type)
}

// RequestedRebootPlan is the plan of a reboot a node asked for
// (v1alpha1.RebootRequiredAnnotation), on the config it runs: drain or not,
// as the rollout controller granted it, reboot, and nothing written. by
// says what asked.
func RequestedRebootPlan(config string, drain bool, by string) PostConfigActions {
	reboot := []PlanAction{{Type: RebootAction}}
	p := PostConfigActions{From: config, Actions: reboot, Drain: drain, Reboot: true,
		Reasons: []PlanReason{{Change: "reboot requested by the node: " + by, Policy: "the node's request, granted by its pool's rollout", Actions: reboot}}}
	p.PlanHash = p.Hash(config)
	return p
}
