package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// Drainer cordons and drains the node with kubectl's drain library, as
// `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` does,
// retrying with backoff while PodDisruptionBudgets block evictions.
type Drainer struct {
	Client kubernetes.Interface
	// AttemptTimeout bounds one drain attempt (the library's Timeout does
	// not bound single calls: its Ctx gets this deadline too).
	AttemptTimeout time.Duration
	// EvictRetryDelay is the pause between evictions refused by a budget
	// (the library's default of 0 is a hot loop).
	EvictRetryDelay time.Duration
	// RetryMin and RetryMax bound the backoff between attempts.
	RetryMin, RetryMax time.Duration
	// Log receives the library's output.
	Log io.Writer
	// Waiting is told which pods remain: as soon as an attempt's first
	// eviction is refused (a PodDisruptionBudget, as `kubectl drain` says
	// at once), and after each failed attempt.
	Waiting func(attempt int, pods []string, err error)
}

// errEvictionRefused is what Waiting is told while an attempt still runs.
var errEvictionRefused = errors.New("an eviction was refused (a PodDisruptionBudget allows no disruption, or the pod's namespace is terminating); retrying")

// refusals calls refused once, the first time a pod's eviction starts a
// second time in one attempt: the library retries an eviction only after
// it was refused (429 from a PodDisruptionBudget, or a terminating
// namespace).
func refusals(refused func()) func(pod *corev1.Pod, usingEviction bool) {
	var mu sync.Mutex
	var once sync.Once
	started := map[types.UID]bool{}
	return func(pod *corev1.Pod, usingEviction bool) {
		mu.Lock()
		again := started[pod.UID]
		started[pod.UID] = true
		mu.Unlock()
		if again && usingEviction {
			once.Do(refused)
		}
	}
}

func (d *Drainer) helper(ctx context.Context) *drain.Helper {
	out := d.Log
	if out == nil {
		out = io.Discard
	}
	return &drain.Helper{
		Ctx:                  ctx,
		Client:               d.Client,
		Force:                true, // pods without a controller are deleted, as the MCO does
		GracePeriodSeconds:   -1,   // each pod's own
		IgnoreAllDaemonSets:  true,
		DeleteEmptyDirData:   true,
		Timeout:              d.AttemptTimeout,
		EvictErrorRetryDelay: d.EvictRetryDelay,
		Out:                  out,
		ErrOut:               out,
	}
}

// Cordon marks the node unschedulable (or schedulable again); a no-op when
// it already is.
func (d *Drainer) Cordon(ctx context.Context, node *corev1.Node, unschedulable bool) error {
	actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
	defer cancel()
	return drain.RunCordonOrUncordon(d.helper(actx), node, unschedulable)
}

// DrainTimeoutError is a drain still blocked at its deadline.
type DrainTimeoutError struct {
	// Pods are the pods still to evict, "namespace/name", sorted.
	Pods []string
	// Err is the last attempt's error.
	Err error
}

func (e *DrainTimeoutError) Error() string {
	return fmt.Sprintf("the drain timed out with %d pods still to evict: %v", len(e.Pods), e.Err)
}

func (e *DrainTimeoutError) Unwrap() error { return e.Err }

// minAttempt is the shortest drain attempt: a drain resumed past its
// deadline still tries once, in case the budgets allow it now.
const minAttempt = time.Second

// Drain evicts the node's pods (DaemonSet pods stay) until none is left,
// however long budgets make it wait; only ctx ends it early, and a
// deadline (zero: none): a drain still blocked then returns a
// *DrainTimeoutError.
func (d *Drainer) Drain(ctx context.Context, nodeName string, deadline time.Time) error {
	backoff := d.RetryMin
	for attempt := 1; ; attempt++ {
		timeout := d.AttemptTimeout
		if !deadline.IsZero() {
			timeout = min(timeout, max(time.Until(deadline), minAttempt))
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		h := d.helper(actx)
		if d.Waiting != nil {
			h.OnPodDeletionOrEvictionStarted = refusals(func() {
				d.Waiting(attempt, d.remaining(actx, nodeName), errEvictionRefused)
			})
		}
		err := drain.RunNodeDrain(h, nodeName)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pods := d.remaining(ctx, nodeName)
		if d.Waiting != nil {
			d.Waiting(attempt, pods, err)
		}
		pause := backoff
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return &DrainTimeoutError{Pods: pods, Err: err}
			}
			pause = min(pause, left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		backoff = min(2*backoff, d.RetryMax)
	}
}

// DeletePods deletes, without eviction (PodDisruptionBudgets do not stop
// a deletion), the pods a drain of the node would still evict, and waits
// until they are gone. It tells deleting about each pod first, with the
// budgets that protect it ("namespace/name").
func (d *Drainer) DeletePods(ctx context.Context, nodeName string, deleting func(pod *corev1.Pod, budgets []string)) error {
	actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
	defer cancel()
	h := d.helper(actx)
	h.DisableEviction = true
	list, errs := h.GetPodsForDeletion(nodeName)
	if list == nil && len(errs) > 0 {
		return fmt.Errorf("listing the pods to delete: %v", errs)
	}
	if list == nil {
		return nil
	}
	pods := list.Pods()
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	for i := range pods {
		ns := pods[i].Namespace
		if _, ok := budgets[ns]; !ok {
			l, err := d.Client.PolicyV1().PodDisruptionBudgets(ns).List(actx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing the PodDisruptionBudgets of namespace %s: %w", ns, err)
			}
			budgets[ns] = l.Items
		}
		if deleting != nil {
			deleting(&pods[i], protecting(&pods[i], budgets[ns]))
		}
	}
	return h.DeleteOrEvictPods(pods)
}

// protecting names the budgets among pdbs (of the pod's namespace) whose
// selector selects the pod, as the eviction API matches them: a budget
// without a selector selects nothing, an empty one every pod.
func protecting(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for i := range pdbs {
		b := &pdbs[i]
		if b.Namespace != pod.Namespace || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, b.Namespace+"/"+b.Name)
	}
	sort.Strings(out)
	return out
}

// ToEvict lists, by owner, the pods a drain of the node would evict now
// (as the drain itself selects them), drained at at: what the rollout's
// pacing waits for to be Ready again (v1alpha1.DrainedPodsAnnotation).
func (d *Drainer) ToEvict(ctx context.Context, nodeName string, at time.Time) (*v1alpha1.DrainedPods, error) {
	actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
	defer cancel()
	list, errs := d.helper(actx).GetPodsForDeletion(nodeName)
	if list == nil && len(errs) > 0 {
		return nil, fmt.Errorf("listing the pods to evict: %v", errs)
	}
	var pods []corev1.Pod
	if list != nil {
		pods = list.Pods()
	}
	return drainedPods(pods, at), nil
}

// drainedPods groups pods by the controller that owns them, in the order
// met, at most v1alpha1.MaxDrainedOwners.
func drainedPods(pods []corev1.Pod, at time.Time) *v1alpha1.DrainedPods {
	d := &v1alpha1.DrainedPods{At: metav1.NewTime(at.UTC().Truncate(time.Second))}
	index := map[string]int{}
	more := map[string]bool{}
	for i := range pods {
		ref := metav1.GetControllerOf(&pods[i])
		if ref == nil {
			d.Unowned++
			continue
		}
		uid := string(ref.UID)
		if k, ok := index[uid]; ok {
			d.Owners[k].Pods++
			continue
		}
		if len(d.Owners) == v1alpha1.MaxDrainedOwners {
			more[uid] = true
			continue
		}
		index[uid] = len(d.Owners)
		d.Owners = append(d.Owners, v1alpha1.DrainedOwner{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: pods[i].Namespace, Name: ref.Name, UID: ref.UID, Pods: 1})
	}
	d.More = len(more)
	return d
}

// drainedAnnotation is DrainedPodsAnnotation's value; "" (removed) for an
// update without a drain.
func drainedAnnotation(d *v1alpha1.DrainedPods) string {
	if d == nil {
		return ""
	}
	b, err := json.Marshal(d)
	if err != nil {
		return ""
	}
	return string(b)
}

// remaining names the pods a drain still has to evict.
func (d *Drainer) remaining(ctx context.Context, nodeName string) []string {
	actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
	defer cancel()
	list, _ := d.helper(actx).GetPodsForDeletion(nodeName)
	if list == nil {
		return nil
	}
	var out []string
	for _, p := range list.Pods() {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

// waitingMessage describes a drain that is still waiting.
func waitingMessage(attempt int, pods []string, err error) string {
	return fmt.Sprintf("attempt %d: %s: %v", attempt, podList(pods), err)
}

// podList is "2 pods still to evict (ns/a, ns/b)", at most 10 named.
func podList(pods []string) string {
	shown := pods
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(pods)-10))
	}
	return fmt.Sprintf("%d pods still to evict (%s)", len(pods), strings.Join(shown, ", "))
}
