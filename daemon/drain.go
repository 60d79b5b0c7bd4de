package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Waiting is told, after each failed attempt, which pods remain.
	Waiting func(attempt int, pods []string, err error)
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

// Drain evicts the node's pods (DaemonSet pods stay) until none is left,
// however long budgets make it wait; only ctx ends it early.
func (d *Drainer) Drain(ctx context.Context, nodeName string) error {
	backoff := d.RetryMin
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, d.AttemptTimeout)
		err := drain.RunNodeDrain(d.helper(actx), nodeName)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.Waiting != nil {
			d.Waiting(attempt, d.remaining(ctx, nodeName), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, d.RetryMax)
	}
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
	shown := pods
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(pods)-10))
	}
	return fmt.Sprintf("attempt %d: %d pods still to evict (%s): %v", attempt, len(pods), strings.Join(shown, ", "), err)
}
