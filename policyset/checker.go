package policyset

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Reasons a policy generation is rejected (Check), also the reasons of its
// Accepted condition.
const (
	ReasonCompileError    = "CompileError"
	ReasonTestsFailed     = "TestsFailed"
	ReasonBundleError     = "BundleError"
	ReasonEvaluationError = "EvaluationError"
)

// PolicyChecker decides whether a NodeDisruptionPolicy generation can be
// activated. The policy controller and the admission webhook both use it,
// so that what the webhook admits the controller accepts.
type PolicyChecker struct {
	// Client reads bundle ConfigMaps and the other policies.
	Client client.Reader
	// Active is the set the policy must compile with.
	Active *ActivePolicies
	// TestTimeout bounds each Rego test (default 5s).
	TestTimeout time.Duration
}

// Check builds the policy of the given generation, with its bundle, and
// checks it: it must compile alone and with the other active policies, its
// Rego tests must pass, and the set with it must evaluate the probe change
// set (planner.Probe) within the sandbox's deadline and memory budget, so
// that a policy whose rules blow up on changes is refused before it is
// active. The limits are the active set's. The reason is one of the
// Reason* constants.
func (c *PolicyChecker) Check(ctx context.Context, ndp *v1alpha1.NodeDisruptionPolicy) (policy.Policy, string, error) {
	pol, _, reason, err := c.CheckSet(ctx, ndp)
	return pol, reason, err
}

// CheckSet is Check, and also returns the planner of the set the policy
// would join: the other active policies and this one, compiled with the
// active set's limits, as the policy controller would put it in force
// (nil when the check fails). The admission webhook's what-if preview plans
// with it, so that the set is compiled once.
func (c *PolicyChecker) CheckSet(ctx context.Context, ndp *v1alpha1.NodeDisruptionPolicy) (policy.Policy, *planner.Planner, string, error) {
	pol := policy.FromAPI("", ndp, 0, 0)
	if ref := ndp.Spec.BundleRef; ref != nil {
		b, err := c.bundle(ctx, ndp)
		if err != nil {
			return pol, nil, ReasonBundleError, err
		}
		pol.Modules = append(pol.Modules, b.Modules...)
		pol.Tests = append(pol.Tests, b.Tests...)
	}
	opts := c.Active.Options()
	pl, err := planner.New(ctx, append(c.Active.Others(ndp.Name), pol), opts)
	if err != nil {
		return pol, nil, ReasonCompileError, err
	}
	if len(pol.Tests) > 0 {
		var out bytes.Buffer
		sum, err := engine.RunRegoTests(ctx, []policy.Policy{pol}, nil, &out, engine.TestOptions{Timeout: c.TestTimeout, MemoryBytes: opts.EvalMemoryBytes})
		if err != nil {
			return pol, nil, ReasonTestsFailed, err
		}
		if sum.Failed+sum.Errored > 0 {
			return pol, nil, ReasonTestsFailed, fmt.Errorf("%d of %d Rego tests failed:\n%s", sum.Failed+sum.Errored, sum.Passed+sum.Failed+sum.Errored, failures(out.String()))
		}
	}
	if err := pl.Probe(ctx, pol.Name); err != nil {
		return pol, nil, ReasonEvaluationError, &EvaluationError{Err: err}
	}
	return pol, pl, "", nil
}

// bundle reads and verifies the policy's bundle, and checks that its roots
// overlap no other policy's bundle.
func (c *PolicyChecker) bundle(ctx context.Context, ndp *v1alpha1.NodeDisruptionPolicy) (policy.Policy, error) {
	ref := ndp.Spec.BundleRef
	key := ref.Key
	if key == "" {
		key = "bundle.tar.gz"
	}
	where := fmt.Sprintf("spec.bundleRef: ConfigMap %s/%s key %s", ref.Namespace, ref.Name, key)
	var cm corev1.ConfigMap
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &cm); err != nil {
		return policy.Policy{}, fmt.Errorf("%s: %w", where, err)
	}
	data, ok := cm.BinaryData[key]
	if !ok {
		return policy.Policy{}, fmt.Errorf("%s: no such binaryData key", where)
	}
	b, err := loader.ReadBundle(where, bytes.NewReader(data), []byte(ref.PublicKey))
	if err != nil {
		return policy.Policy{}, err
	}
	roots, err := loader.BundleRoots(bytes.NewReader(data))
	if err != nil {
		return policy.Policy{}, fmt.Errorf("%s: %w", where, err)
	}
	var list v1alpha1.NodeDisruptionPolicyList
	if err := c.Client.List(ctx, &list); err != nil {
		return policy.Policy{}, err
	}
	for _, other := range list.Items {
		oref := other.Spec.BundleRef
		if other.Name == ndp.Name || oref == nil {
			continue
		}
		// Only an active policy holds its roots: a refused newcomer that
		// takes them must not get the policy it overlaps refused in turn
		// when that one is checked again. (Two newcomers at once: the
		// second's set, compiled with the first, refuses the shared
		// packages.)
		if c.Active != nil {
			if _, active := c.Active.Get(other.Name); !active {
				continue
			}
		}
		var ocm corev1.ConfigMap
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: oref.Namespace, Name: oref.Name}, &ocm); err != nil {
			continue // the other policy reports its own missing bundle
		}
		okey := oref.Key
		if okey == "" {
			okey = "bundle.tar.gz"
		}
		oroots, err := loader.BundleRoots(bytes.NewReader(ocm.BinaryData[okey]))
		if err != nil {
			continue
		}
		if x, y, overlap := loader.RootsOverlap(roots, oroots); overlap {
			return policy.Policy{}, fmt.Errorf("%s: bundle root %q overlaps root %q of the bundle of NodeDisruptionPolicy %q", where, x, y, other.Name)
		}
	}
	return b, nil
}

// failures keeps the failure section of a PrettyReporter report.
func failures(report string) string {
	if i := strings.Index(report, "FAILURES"); i >= 0 {
		report = report[i:]
	}
	return conditions.Truncate(strings.TrimSpace(report), 4000)
}
