package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/alertsilence"
	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ndp.dev,resources=rolloutpolicies,verbs=get;list;watch

// SilenceReconciler keeps an Alertmanager silence for each node that ndp
// disrupts on purpose, in the pools whose RolloutPolicy sets silences
// (package alertsilence decides; this reads the node, calls Alertmanager
// and writes the node's ndp.dev/silence annotation, its only write). It
// never holds a rollout: the rollout controller does not read silences,
// and an Alertmanager that fails is a Warning Event (SilenceFailed) and a
// retry with the queue's backoff. It writes none of the fields the MCO
// writes, so it does not stand down beside it.
type SilenceReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Silences calls the Alertmanagers; nil: a zero alertsilence.Client.
	Silences *alertsilence.Client
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// SetupWithManager reconciles a node when it changes (its annotations
// say whether it is at work) and every node that is at work or keeps a
// silence when a RolloutPolicy's spec changes.
func (r *SilenceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("silence").
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or[client.Object](predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&v1alpha1.RolloutPolicy{}, handler.EnqueueRequestsFromMapFunc(r.silenceCandidates), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// silenceCandidates are the nodes a policy change can concern: at work, or
// keeping a silence.
func (r *SilenceReconciler) silenceCandidates(ctx context.Context, _ client.Object) []reconcile.Request {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, kept := n.Annotations[v1alpha1.SilenceAnnotation]; kept || updating(n) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
		}
	}
	return out
}

// silenceDisrupted: ndp is updating the node or rebooting it as it asked
// (updating: the pool status' own predicate) and it has not failed; a
// failed node's alerts are what its administrator must hear.
func silenceDisrupted(n *corev1.Node) bool { return updating(n) && !nodeDegraded(n) }

// Reconcile does what alertsilence.Decide says for one node: one
// Alertmanager call at most, then the annotation, then an Event.
func (r *SilenceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // a deleted node's silence ends by itself
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	// Whole seconds, as the record keeps them: an extension posts the
	// silence's own start and id, which Alertmanager updates in place.
	now = now.Truncate(time.Second)
	rec, err := alertsilence.ParseRecord(node.Annotations[v1alpha1.SilenceAnnotation])
	if err != nil {
		// Not ours to read (written by hand): dropped, as if none were kept.
		if err := r.setRecord(ctx, &node, nil); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(&node, nil, corev1.EventTypeWarning, "SilenceFailed", "Silence", "%s", conditions.Truncate(err.Error()+": removed", 1000))
	}
	disrupted := silenceDisrupted(&node)
	var spec *v1alpha1.NodeSilences
	pool := ""
	if disrupted {
		if pool, spec, err = r.silencesFor(ctx, &node); err != nil {
			return reconcile.Result{}, err
		}
	}
	act := alertsilence.Decide(alertsilence.Input{Now: now, Disrupted: disrupted, Spec: spec, Record: rec})
	c := r.Silences
	if c == nil {
		c = &alertsilence.Client{}
	}
	switch act.Op {
	case alertsilence.Expire:
		if act.Call {
			if err := c.Expire(ctx, rec.URL, rec.ID); err != nil {
				r.failed(&node, "expire silence "+rec.ID, err)
				return reconcile.Result{}, err
			}
		}
		if err := r.setRecord(ctx, &node, nil); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(&node, nil, corev1.EventTypeNormal, "SilenceExpired", "Silence", "silence %s in %s expired: %s", rec.ID, rec.URL, act.Why)
	case alertsilence.Create, alertsilence.Extend:
		next := alertsilence.Record{URL: spec.URL, Since: now, Until: act.Until}
		id := ""
		if act.Op == alertsilence.Extend {
			next.Since, id = rec.Since, rec.ID
		}
		s, err := alertsilence.Silence(spec, node.Name, pool, id, next.Since, act.Until)
		if err != nil {
			// The policy's matchers: nothing to retry until it changes
			// (which wakes this node).
			r.failed(&node, "silence", err)
			return reconcile.Result{}, nil
		}
		if next.ID, err = c.Post(ctx, spec.URL, s); err != nil {
			r.failed(&node, "silence", err)
			return reconcile.Result{}, err
		}
		if err := r.setRecord(ctx, &node, &next); err != nil {
			return reconcile.Result{}, err
		}
		reason, verb := "SilenceCreated", "created"
		if act.Op == alertsilence.Extend {
			reason, verb = "SilenceExtended", "extended"
		}
		r.Recorder.Eventf(&node, nil, corev1.EventTypeNormal, reason, "Silence", "%s", conditions.Truncate(fmt.Sprintf("silence %s in %s %s until %s: %s",
			next.ID, spec.URL, verb, act.Until.UTC().Format(time.RFC3339), matcherList(spec, node.Name)), 1000))
	}
	if act.Next.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(act.Next.Sub(now), time.Second)}, nil
}

// silencesFor is the node's pool and the silences of the first policy (by
// name) of that pool that sets them; nil when none does or no pool
// manages the node.
func (r *SilenceReconciler) silencesFor(ctx context.Context, n *corev1.Node) (string, *v1alpha1.NodeSilences, error) {
	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return "", nil, err
	}
	ps := make([]*mcfgv1.MachineConfigPool, len(pools.Items))
	for i := range pools.Items {
		ps[i] = &pools.Items[i]
	}
	pool, err := nodepool.Primary(n, ps)
	if err != nil || pool == nil {
		return "", nil, nil // the rollout and pool status controllers report an unmanaged node
	}
	var policies v1alpha1.RolloutPolicyList
	if err := r.Client.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return "", nil, err
	}
	for _, p := range rolloutcontrol.PoliciesFor(pool, policies.Items) {
		if p.Spec.Silences != nil {
			return pool.Name, p.Spec.Silences, nil
		}
	}
	return pool.Name, nil, nil
}

// failed says on the node that its silence could not be made or ended:
// the update goes on regardless.
func (r *SilenceReconciler) failed(n *corev1.Node, what string, err error) {
	r.Recorder.Eventf(n, nil, corev1.EventTypeWarning, "SilenceFailed", "Silence", "%s",
		conditions.Truncate("could not "+what+" (the update goes on, retried): "+err.Error(), 1000))
}

// setRecord writes the node's silence annotation (nil removes it), a
// merge patch of that one key: its only writer is this controller.
func (r *SilenceReconciler) setRecord(ctx context.Context, n *corev1.Node, rec *alertsilence.Record) error {
	var v any
	if rec != nil {
		v = rec.String()
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.SilenceAnnotation: v}}})
	err := r.Client.Patch(ctx, n.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// matcherList is the silence's matchers as given, with the node's name.
func matcherList(s *v1alpha1.NodeSilences, node string) string {
	out := make([]string, len(s.Matchers))
	for i, m := range s.Matchers {
		out[i] = strings.ReplaceAll(string(m), v1alpha1.SilenceNodePlaceholder, node)
	}
	return strings.Join(out, ", ")
}
