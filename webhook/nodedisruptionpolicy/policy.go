// Package nodedisruptionpolicy holds the validation of NodeDisruptionPolicies,
// which ndp-controller serves in both modes, as it runs the policy
// controller (controllers/nodedisruptionpolicy) in both: a policy the
// controller would reject is refused, and a dry-run says which waiting
// plans it would change (the what-if, package preview). In advisor mode an
// EditPreview (package advisor's) adds what else the edit would change.
//
// The validation fails closed (manifests/webhook); the what-if preview of
// a policy delete, served by the same handler, is called on dry-runs only
// and fails open: a policy can always be deleted.
package nodedisruptionpolicy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// +kubebuilder:rbac:groups=ndp.dev,resources=nodedisruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// PolicyValidation refuses a NodeDisruptionPolicy the policy controller
// would reject: it compiles the policy in the sandbox with the replica's
// active set, runs its regoTests, and resolves and verifies its bundle,
// with the policy controller's own checker (policyset). The denial names
// the policy and the line and column, or the forbidden builtin.
//
// On a server dry-run of a create, an update or a delete, it also warns
// which plans waiting in MachineConfig status would change, and how (the
// what-if preview, Previewer.WhatIf). The what-if only informs: whatever
// happens to it, it never turns an allowed request into a denial.
//
// As the advisor with --mco-entries, on every create, update or delete
// (dry-run or not) it also warns what ndp would then write in
// MachineConfiguration cluster's spec.nodeDisruptionPolicy, what of the
// policy the MCO cannot be given and why, and what the MCO would then do
// with each pool's pending update (Also, advisor.MCOEntriesPreview;
// docs/openshift.md#ndps-policies-in-the-mco). That too only informs.
type PolicyValidation struct {
	Checker *policyset.PolicyChecker
	Decoder admission.Decoder
	// Previewer, when set, makes the what-if preview of dry-runs.
	Previewer *preview.Previewer
	// Also, when set, previews what else an edit changes (the advisor's
	// entries in MachineConfiguration cluster, with --mco-entries).
	Also EditPreview
}

// ValidationDeadline is the handler's deadline: below the timeoutSeconds of
// its webhook configuration (15 s), so that it answers before the API
// server gives up on it.
const ValidationDeadline = 12 * time.Second

// EditPreview previews what a policy create, update or delete changes
// besides the waiting plans, on every request (dry-run or not). It only
// informs: it never fails the request.
type EditPreview interface {
	// Put adds to the what-if's warnings those of putting pol in force;
	// set is the policy set with it (PolicyChecker.CheckSet).
	Put(ctx context.Context, whatIf []string, pol policy.Policy, set *planner.Planner) []string
	// Delete adds to the what-if's warnings those of deleting the named
	// policy.
	Delete(ctx context.Context, whatIf []string, name string) []string
	// Unchanged is the warning of a dry-run that leaves the spec as it is.
	Unchanged() string
}

// Handle implements admission.Handler.
func (h *PolicyValidation) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, ValidationDeadline)
	defer cancel()
	whatIf := h.Previewer != nil && req.DryRun != nil && *req.DryRun
	if req.Operation == admissionv1.Delete {
		// A deletion is never refused (the webhook configuration calls
		// this handler for dry-run deletes only, failing open).
		var ws []string
		if whatIf {
			ws = h.whatIfDelete(ctx, req.Name)
		}
		if h.Also != nil {
			ws = h.Also.Delete(ctx, ws, req.Name)
		}
		return admission.Allowed("").WithWarnings(ws...)
	}
	var ndp v1alpha1.NodeDisruptionPolicy
	if err := h.Decoder.Decode(req, &ndp); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding NodeDisruptionPolicy %q: %w", req.Name, err))
	}
	if len(req.OldObject.Raw) > 0 {
		// A label or annotation change runs nothing new: it must pass
		// even on a policy that got in unchecked, while the spec is fixed.
		var old v1alpha1.NodeDisruptionPolicy
		if err := h.Decoder.DecodeRaw(req.OldObject, &old); err == nil && equality.Semantic.DeepEqual(old.Spec, ndp.Spec) {
			resp := admission.Allowed("spec unchanged")
			if whatIf {
				resp = resp.WithWarnings(preview.NoPendingPlanChanges + ": the spec is unchanged")
				if h.Also != nil {
					resp = resp.WithWarnings(h.Also.Unchanged())
				}
			}
			return resp
		}
	}
	pol, set, reason, err := h.Checker.CheckSet(ctx, &ndp)
	if err != nil {
		msg := err.Error()
		if named := fmt.Sprintf("NodeDisruptionPolicy %q", ndp.Name); !strings.Contains(msg, named) {
			msg = named + ": " + msg
		}
		return admission.Denied(fmt.Sprintf("%s (%s)", msg, reason))
	}
	resp := admission.Allowed(fmt.Sprintf("revision %s, %d rules", pol.Revision(), pol.RuleCount()))
	var ws []string
	if whatIf {
		ws = h.whatIfPut(ctx, ndp.Name, set)
	}
	if h.Also != nil {
		ws = h.Also.Put(ctx, ws, pol, set)
	}
	if len(ws) > 0 {
		resp = resp.WithWarnings(ws...)
	}
	return resp
}

// whatIfPut previews the set with the policy added or replaced.
func (h *PolicyValidation) whatIfPut(ctx context.Context, name string, set *planner.Planner) []string {
	if name == policies.DefaultPolicyName {
		return []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is managed by ndp-controller, which restores its shipped spec (override a default with a policy of your own at a higher priority)", preview.NoPendingPlanChanges, name)}
	}
	return h.whatIf(ctx, func(context.Context) (*planner.Planner, error) { return set, nil })
}

// whatIfDelete previews the set without the policy.
func (h *PolicyValidation) whatIfDelete(ctx context.Context, name string) []string {
	if name == policies.DefaultPolicyName {
		return []string{fmt.Sprintf("NodeDisruptionPolicy %s cannot be deleted: ndp-controller restores it at once and plans with it again (override a default with a policy of your own at a higher priority)", name)}
	}
	active := h.Checker.Active
	if _, ok := active.Get(name); !ok {
		return []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is not in the active set (never accepted)", preview.NoPendingPlanChanges, name)}
	}
	return h.whatIf(ctx, func(ctx context.Context) (*planner.Planner, error) {
		set, err := active.Without(ctx, name)
		if err == nil && set == nil {
			err = errors.New("no NodeDisruptionPolicy would be left active")
		}
		return set, err
	})
}

// whatIf runs the preview with the edited set; any failure (a set that
// does not compile, a deadline, an unreadable cluster) is one warning, and
// the request is allowed all the same.
func (h *PolicyValidation) whatIf(ctx context.Context, edited func(context.Context) (*planner.Planner, error)) (warnings []string) {
	defer func() {
		// The policy webhook fails closed: nothing here may fail the request.
		if r := recover(); r != nil {
			warnings = []string{preview.NoWhatIf(fmt.Errorf("internal error: %v", r), ValidationDeadline)}
		}
	}()
	set, err := edited(ctx)
	if err != nil {
		return []string{preview.NoWhatIf(err, ValidationDeadline)}
	}
	w, err := h.Previewer.WhatIf(ctx, set)
	if err != nil {
		return []string{preview.NoWhatIf(err, ValidationDeadline)}
	}
	return w.Warnings()
}
