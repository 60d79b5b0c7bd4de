package nodedisruptionpolicy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/policyset"
)

// Condition reasons of a NodeDisruptionPolicy.
const (
	ReasonCompiled        = "Compiled"
	ReasonCompileError    = policyset.ReasonCompileError
	ReasonTestsFailed     = policyset.ReasonTestsFailed
	ReasonBundleError     = policyset.ReasonBundleError
	ReasonEvaluationError = policyset.ReasonEvaluationError
	ReasonPreviousActive  = "PreviousRevisionActive"
	ReasonNotActive       = "NeverAccepted"
	ReasonRestored        = "Restored"
)

var (
	compileSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ndp_policy_compile_duration_seconds",
		Help:    "Time to compile a NodeDisruptionPolicy with the active set and run its Rego tests.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"policy"})
	compileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_policy_compile_errors_total",
		Help: "NodeDisruptionPolicy generations rejected, by reason.",
	}, []string{"policy", "reason"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(compileSeconds, compileErrors)
}

// DefaultPolicyName is the NodeDisruptionPolicy that holds the built-in
// defaults, in the cluster where administrators can read them.
const DefaultPolicyName = policies.DefaultPolicyName

// DefaultNodeDisruptionPolicy is the desired `default` policy: priority 0,
// the embedded default Rego and its tests.
func DefaultNodeDisruptionPolicy() *v1alpha1.NodeDisruptionPolicy {
	def := policy.DefaultPolicy()
	prio := v1alpha1.DefaultsPriority
	p := &v1alpha1.NodeDisruptionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultPolicyName, Annotations: map[string]string{"ndp.dev/managed-by": "ndp-controller"}},
		Spec:       v1alpha1.NodeDisruptionPolicySpec{Priority: &prio},
	}
	// The default policy is one module and one test module (policies/default).
	if len(def.Modules) > 0 {
		p.Spec.Rego = def.Modules[0].Source
	}
	if len(def.Tests) > 0 {
		p.Spec.RegoTests = def.Tests[0].Source
	}
	return p
}

// +kubebuilder:rbac:groups=ndp.dev,resources=nodedisruptionpolicies,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=ndp.dev,resources=nodedisruptionpolicies/status,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election: the Lease in ndp-system only (--leader-election-namespace
// in manifests/deploy/ndp-controller.yaml), read, created and renewed, and
// the "became leader" Event on it (a core/v1 Event, in ndp-system).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=ndp-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=ndp-system,resources=events,verbs=create;patch

// Reconciler compiles each NodeDisruptionPolicy inside the sandbox
// with the rest of the active set, runs its regoTests, and reports the
// outcome in its conditions. A generation that fails keeps the last good
// revision active. It also keeps the `default` policy as shipped.
//
// It runs on every replica, so that each replica's admission webhook
// previews and validates with the active set; only the leader writes
// statuses, records events and restores the default policy.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Active   *policyset.ActivePolicies
	// TestTimeout bounds each Rego test (default 5s).
	TestTimeout time.Duration
	// RetryRejected is how often a rejected policy is compiled again (a
	// minute when zero): a rejection can depend on the rest of the set.
	RetryRejected time.Duration
	// Elected is closed once this replica leads: SetupWithManager sets the
	// manager's Elected(). While it is open (or nil) the reconciler stands
	// by: it keeps Active current and writes nothing.
	Elected <-chan struct{}

	// resync carries one event per policy when this replica becomes the
	// leader: statuses computed while standing by were not written.
	resync chan event.GenericEvent
}

// SetupWithManager watches NodeDisruptionPolicies and the ConfigMaps their
// bundles live in, and ensures the default policy once the manager (and
// leadership) starts.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Elected == nil {
		r.Elected = mgr.Elected()
	}
	r.resync = make(chan event.GenericEvent, 64)
	// Runnables without NeedLeaderElection run on the leader only.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.ensureDefaultAtStart(ctx)
		return r.resyncAll(ctx)
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodedisruptionpolicy").
		For(&v1alpha1.NodeDisruptionPolicy{}).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.policiesForConfigMap)).
		WatchesRawSource(source.Channel(r.resync, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Complete(r)
}

// leader tells whether this replica writes: the manager closes Elected
// when it wins the election (at once without leader election).
func (r *Reconciler) leader() bool {
	select {
	case <-r.Elected:
		return true
	default:
		return false
	}
}

// resyncAll enqueues every policy, so that a new leader writes the
// statuses it computed while standing by.
func (r *Reconciler) resyncAll(ctx context.Context) error {
	var list v1alpha1.NodeDisruptionPolicyList
	if err := r.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing NodeDisruptionPolicies: %w", err)
	}
	for i := range list.Items {
		select {
		case r.resync <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// policiesForConfigMap maps a ConfigMap to the policies whose bundle it holds.
func (r *Reconciler) policiesForConfigMap(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.NodeDisruptionPolicyList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if ref := p.Spec.BundleRef; ref != nil && ref.Namespace == obj.GetNamespace() && ref.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

// ensureDefault creates the default policy if it is missing.
func (r *Reconciler) ensureDefault(ctx context.Context) error {
	err := r.Client.Create(ctx, DefaultNodeDisruptionPolicy())
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default NodeDisruptionPolicy: %w", err)
	}
	return nil
}

// ensureDefaultAtStart retries ensureDefault until it succeeds: at
// startup the (fail-closed) policy webhook may not serve yet.
func (r *Reconciler) ensureDefaultAtStart(ctx context.Context) {
	_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}, func(ctx context.Context) (bool, error) {
		if err := r.ensureDefault(ctx); err != nil {
			log.FromContext(ctx).Info("will retry", "error", err.Error())
			return false, nil
		}
		return true, nil
	})
}

// Reconcile brings one policy's activation and status in line with its
// current generation.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var ndp v1alpha1.NodeDisruptionPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &ndp); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		if err := r.Active.Remove(ctx, req.Name); err != nil {
			return reconcile.Result{}, err
		}
		if req.Name == DefaultPolicyName && r.leader() {
			logger.Info("restoring the deleted default NodeDisruptionPolicy")
			return reconcile.Result{}, r.ensureDefault(ctx) // an error requeues
		}
		return reconcile.Result{}, nil
	}
	if !ndp.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.Active.Remove(ctx, ndp.Name)
	}
	if ndp.Name == DefaultPolicyName && r.leader() {
		if want := DefaultNodeDisruptionPolicy(); !equality.Semantic.DeepEqual(ndp.Spec, want.Spec) {
			ndp.Spec = want.Spec
			if err := r.Client.Update(ctx, &ndp); err != nil {
				return reconcile.Result{}, err
			}
			r.Recorder.Eventf(&ndp, nil, corev1.EventTypeWarning, ReasonRestored, "Restore", "the default policy is managed by ndp; edits are undone (write a policy of your own with a higher priority instead)")
			return reconcile.Result{}, nil // the update triggers the next reconcile
		}
	}

	// Once this generation is in the set, or refused with the last good
	// revision restored, plans and previews may rely on the set for it.
	defer r.Active.Seen(ndp.Name, ndp.Generation)
	start := time.Now()
	candidate, reason, err := r.checker().Check(ctx, &ndp)
	if err == nil {
		err = r.Active.Put(ctx, candidate)
		var evalErr *policyset.EvaluationError
		switch {
		case errors.As(err, &evalErr):
			reason = ReasonEvaluationError
		case err != nil:
			reason = ReasonCompileError
			err = stripActiveSetPrefix(err)
		}
	}
	compileSeconds.WithLabelValues(ndp.Name).Observe(time.Since(start).Seconds())
	if !r.leader() {
		// A standby keeps its active set current for its webhook; the
		// leader reports. A rejected policy is retried as on the leader.
		if err != nil {
			if _, ok := r.Active.Get(ndp.Name); !ok {
				r.restorePrevious(ctx, &ndp)
			}
			return reconcile.Result{RequeueAfter: r.retryRejected()}, nil
		}
		return reconcile.Result{}, nil
	}

	status := ndp.Status.DeepCopy()
	status.ObservedGeneration = ndp.Generation
	var result reconcile.Result
	if err != nil {
		// A rejection can depend on the rest of the set (a package root
		// another policy owns) or on a bundle yet to be fixed: retry now and
		// then, so the policy is accepted once it can be.
		result.RequeueAfter = r.retryRejected()
		compileErrors.WithLabelValues(ndp.Name, reason).Inc()
		msg := err.Error()
		before := meta.FindStatusCondition(ndp.Status.Conditions, v1alpha1.ConditionAccepted)
		setCondition(status, ndp.Generation, v1alpha1.ConditionAccepted, metav1.ConditionFalse, reason, msg)
		setCondition(status, ndp.Generation, v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, msg)
		prev, ok := r.Active.Get(ndp.Name)
		if !ok {
			prev, ok = r.restorePrevious(ctx, &ndp)
		}
		if ok {
			setCondition(status, ndp.Generation, v1alpha1.ConditionActive, metav1.ConditionTrue, ReasonPreviousActive,
				fmt.Sprintf("generation %d is rejected; the last accepted revision %s stays active", ndp.Generation, prev.Revision()))
		} else {
			setCondition(status, ndp.Generation, v1alpha1.ConditionActive, metav1.ConditionFalse, ReasonNotActive, "no generation of this policy has been accepted")
			status.Revision, status.Rules, status.ActiveSpec = "", 0, nil
		}
		if before == nil || before.Status != metav1.ConditionFalse || before.ObservedGeneration != ndp.Generation || before.Message != conditions.Message(msg) {
			r.Recorder.Eventf(&ndp, nil, corev1.EventTypeWarning, "Rejected", "Compile", "generation %d rejected: %s", ndp.Generation, conditions.Truncate(msg, 1000))
		}
	} else {
		rev := candidate.Revision()
		setCondition(status, ndp.Generation, v1alpha1.ConditionAccepted, metav1.ConditionTrue, ReasonCompiled, fmt.Sprintf("generation %d compiled and its Rego tests passed", ndp.Generation))
		setCondition(status, ndp.Generation, v1alpha1.ConditionActive, metav1.ConditionTrue, ReasonCompiled, fmt.Sprintf("revision %s is active", rev))
		setCondition(status, ndp.Generation, v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonCompiled, "")
		if status.Revision != rev {
			r.Recorder.Eventf(&ndp, nil, corev1.EventTypeNormal, "Accepted", "Compile", "generation %d accepted, revision %s active", ndp.Generation, rev)
		}
		status.Revision, status.Rules, status.ActiveSpec = rev, int32(candidate.RuleCount()), ndp.Spec.DeepCopy()
	}
	if equality.Semantic.DeepEqual(*status, ndp.Status) {
		return result, nil
	}
	ndp.Status = *status
	return result, client.IgnoreNotFound(r.Client.Status().Update(ctx, &ndp))
}

// restorePrevious re-activates the spec recorded as active in the status,
// when this controller has no revision of the policy in memory (it
// restarted since): it must still compile and produce the recorded revision.
func (r *Reconciler) restorePrevious(ctx context.Context, ndp *v1alpha1.NodeDisruptionPolicy) (policy.Policy, bool) {
	if ndp.Status.ActiveSpec == nil || ndp.Status.Revision == "" {
		return policy.Policy{}, false
	}
	prev := ndp.DeepCopy()
	prev.Spec = *ndp.Status.ActiveSpec
	pol, _, err := r.checker().Check(ctx, prev)
	if err != nil || pol.Revision() != ndp.Status.Revision || r.Active.Put(ctx, pol) != nil {
		log.FromContext(ctx).Info("the recorded active revision cannot be restored", "revision", ndp.Status.Revision, "error", err)
		return policy.Policy{}, false
	}
	return pol, true
}

func (r *Reconciler) checker() *policyset.PolicyChecker {
	return &policyset.PolicyChecker{Client: r.Client, Active: r.Active, TestTimeout: r.TestTimeout}
}

func (r *Reconciler) retryRejected() time.Duration {
	if r.RetryRejected > 0 {
		return r.RetryRejected
	}
	return time.Minute
}

func setCondition(s *v1alpha1.NodeDisruptionPolicyStatus, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: conditions.Message(msg), ObservedGeneration: gen})
}

// stripActiveSetPrefix keeps the policy error of a failed set compile.
func stripActiveSetPrefix(err error) error {
	var pe *policy.Error
	if errors.As(err, &pe) {
		return pe
	}
	return err
}
