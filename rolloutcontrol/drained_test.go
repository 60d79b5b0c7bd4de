package rolloutcontrol

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestDrainedNotReady(t *testing.T) {
	drainedAt := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	before, after := drainedAt.Add(-time.Hour), drainedAt.Add(time.Minute)
	rs := v1alpha1.DrainedOwner{Kind: "ReplicaSet", Namespace: "web", Name: "cart-7d9", UID: "rs-1", Pods: 2}
	sts := v1alpha1.DrainedOwner{Kind: "StatefulSet", Namespace: "db", Name: "pg", UID: "sts-1", Pods: 1}
	d := &v1alpha1.DrainedPods{At: metav1.NewTime(drainedAt), Owners: []v1alpha1.DrainedOwner{rs, sts}}
	pod := func(name string, owner types.UID, created time.Time, ready bool, mods ...func(*corev1.Pod)) *corev1.Pod {
		yes := true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: &yes, Kind: "ReplicaSet", Name: "x"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	notController := func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }
	deleting := func(p *corev1.Pod) { now := metav1.NewTime(after); p.DeletionTimestamp = &now }
	for _, tc := range []struct {
		name string
		d    *v1alpha1.DrainedPods
		pods []*corev1.Pod
		want []string
	}{
		{"no drain", nil, nil, nil},
		{"a drain that evicted nothing owned", &v1alpha1.DrainedPods{At: metav1.NewTime(drainedAt), Unowned: 2}, nil, nil},
		{"replacements Ready", d, []*corev1.Pod{
			pod("cart-a", "rs-1", after, true), pod("cart-b", "rs-1", after, true), pod("pg-0", "sts-1", after, true)}, nil},
		{"one replacement still coming", d, []*corev1.Pod{
			pod("cart-a", "rs-1", after, true), pod("cart-b", "rs-1", after, false), pod("pg-0", "sts-1", after, true)},
			[]string{"ReplicaSet web/cart-7d9 (1 of 2 Ready)"}},
		{"a StatefulSet pod pending", d, []*corev1.Pod{
			pod("cart-a", "rs-1", after, true), pod("cart-b", "rs-1", after, true), pod("pg-0", "sts-1", after, false)},
			[]string{"StatefulSet db/pg (0 of 1 Ready)"}},
		// Ready pods that ran elsewhere before the drain are not the
		// evicted ones back.
		{"old pods do not count", d, []*corev1.Pod{
			pod("cart-x", "rs-1", before, true), pod("cart-y", "rs-1", before, true), pod("cart-a", "rs-1", after, false),
			pod("pg-0", "sts-1", after, true)},
			[]string{"ReplicaSet web/cart-7d9 (0 of 2 Ready)"}},
		// Scaled down or deleted: nothing on its way, nothing to wait for.
		{"an owner with nothing coming", d, []*corev1.Pod{pod("cart-a", "rs-1", after, true)}, nil},
		{"a terminating pod is not on its way", d, []*corev1.Pod{
			pod("cart-a", "rs-1", after, true), pod("cart-old", "rs-1", before, false, deleting), pod("pg-0", "sts-1", after, true)}, nil},
		{"an owner reference that is not the controller", d, []*corev1.Pod{
			pod("cart-a", "rs-1", after, false, notController), pod("pg-0", "sts-1", after, true)}, nil},
		{"pods of other owners are ignored", d, []*corev1.Pod{
			pod("other", "rs-9", after, false), pod("pg-0", "sts-1", after, true)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DrainedNotReady(tc.d, tc.pods)); diff != "" {
				t.Errorf("DrainedNotReady (-want +got):\n%s", diff)
			}
		})
	}
}
