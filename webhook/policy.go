package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/policyset"
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
// with each pool's pending update (docs/openshift.md#ndps-policies-in-the-mco).
// That too only informs.
type PolicyValidation struct {
	Checker *policyset.PolicyChecker
	Decoder admission.Decoder
	// Previewer, when set, makes the what-if preview of dry-runs.
	Previewer *Previewer
	// MCOEntries is ndp-controller's --mco-entries as the advisor (off,
	// static or all): unless off (or empty), the entries preview runs. It
	// needs Previewer.
	MCOEntries string
	// APIReader reads MachineConfiguration cluster with its managedFields
	// (the manager's cache strips them), to tell ndp's entries from the
	// administrator's.
	APIReader client.Reader
	// PreviewDeadline bounds the entries preview (DefaultPreviewDeadline
	// when zero), within ValidationDeadline.
	PreviewDeadline time.Duration
}

// entriesPreview says whether the entries preview runs.
func (h *PolicyValidation) entriesPreview() bool {
	return h.Previewer != nil && mcoEntriesOn(h.MCOEntries)
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
		if h.entriesPreview() {
			ws = withEntries(ws, h.entriesDelete(ctx, req.Name))
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
				resp = resp.WithWarnings(NoPendingPlanChanges + ": the spec is unchanged")
				if h.entriesPreview() {
					resp = resp.WithWarnings(MCOEntriesNoChange + ": the spec is unchanged")
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
	if h.entriesPreview() {
		ws = withEntries(ws, h.entriesPut(ctx, pol, set))
	}
	if len(ws) > 0 {
		resp = resp.WithWarnings(ws...)
	}
	return resp
}

// withEntries adds the entries preview's warnings after the what-if's,
// within what the API server passes on whole.
func withEntries(whatIf, entries []string) []string {
	return append(whatIf, fitWarningsWithin(entries, MaxWarningsBytes-warningBytes(whatIf), moreEntriesNote)...)
}

// entriesPut previews ndp's entries with pol added or replaced; set is the
// policy set with it (PolicyChecker.CheckSet).
func (h *PolicyValidation) entriesPut(ctx context.Context, pol policy.Policy, set *planner.Planner) []string {
	if pol.Name == policies.DefaultPolicyName {
		return nil // the controller restores it: whatIfPut says so
	}
	return h.mcoEntriesWarnings(ctx, mcoEntriesInput{edited: pol.Name, policy: &pol, candidate: func(context.Context) (policySet, error) {
		return policySet{planner: set, policies: append(h.Checker.Active.Others(pol.Name), pol)}, nil
	}})
}

// entriesDelete previews ndp's entries without the named policy: what ndp
// removes.
func (h *PolicyValidation) entriesDelete(ctx context.Context, name string) []string {
	if name == policies.DefaultPolicyName {
		return nil // the controller restores it: whatIfDelete says so
	}
	active := h.Checker.Active
	if _, ok := active.Get(name); !ok {
		return []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is not in the active set (never accepted)", MCOEntriesNoChange, name)}
	}
	return h.mcoEntriesWarnings(ctx, mcoEntriesInput{edited: name, candidate: func(ctx context.Context) (policySet, error) {
		set, err := active.Without(ctx, name)
		return policySet{planner: set, policies: active.Others(name)}, err
	}})
}

// whatIfPut previews the set with the policy added or replaced.
func (h *PolicyValidation) whatIfPut(ctx context.Context, name string, set *planner.Planner) []string {
	if name == policies.DefaultPolicyName {
		return []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is managed by ndp-controller, which restores its shipped spec (override a default with a policy of your own at a higher priority)", NoPendingPlanChanges, name)}
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
		return []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is not in the active set (never accepted)", NoPendingPlanChanges, name)}
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
			warnings = []string{noWhatIf(fmt.Errorf("internal error: %v", r))}
		}
	}()
	set, err := edited(ctx)
	if err != nil {
		return []string{noWhatIf(err)}
	}
	w, err := h.Previewer.WhatIf(ctx, set)
	if err != nil {
		return []string{noWhatIf(err)}
	}
	return w.Warnings()
}
