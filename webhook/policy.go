package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/policyset"
)

// +kubebuilder:rbac:groups=ndp.dev,resources=nodedisruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// PolicyValidation refuses a NodeDisruptionPolicy the policy controller
// would reject: it compiles the policy in the sandbox with the replica's
// active set, runs its regoTests, and resolves and verifies its bundle,
// with the policy controller's own checker (policyset). The denial names
// the policy and the line and column, or the forbidden builtin.
type PolicyValidation struct {
	Checker *policyset.PolicyChecker
	Decoder admission.Decoder
}

// Handle implements admission.Handler.
func (h *PolicyValidation) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, ValidationDeadline)
	defer cancel()
	var ndp v1alpha1.NodeDisruptionPolicy
	if err := h.Decoder.Decode(req, &ndp); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding NodeDisruptionPolicy %q: %w", req.Name, err))
	}
	if len(req.OldObject.Raw) > 0 {
		// A label or annotation change runs nothing new: it must pass
		// even on a policy that got in unchecked, while the spec is fixed.
		var old v1alpha1.NodeDisruptionPolicy
		if err := h.Decoder.DecodeRaw(req.OldObject, &old); err == nil && equality.Semantic.DeepEqual(old.Spec, ndp.Spec) {
			return admission.Allowed("spec unchanged")
		}
	}
	pol, reason, err := h.Checker.Check(ctx, &ndp)
	if err != nil {
		msg := err.Error()
		if named := fmt.Sprintf("NodeDisruptionPolicy %q", ndp.Name); !strings.Contains(msg, named) {
			msg = named + ": " + msg
		}
		return admission.Denied(fmt.Sprintf("%s (%s)", msg, reason))
	}
	return admission.Allowed(fmt.Sprintf("revision %s, %d rules", pol.Revision(), pol.RuleCount()))
}
