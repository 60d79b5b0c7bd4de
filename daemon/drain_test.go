package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestDrainedPods(t *testing.T) {
	yes := true
	owned := func(ns, name, kind, owner string, uid types.UID) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, UID: uid, Controller: &yes}}}}
	}
	bare := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "debug"}}
	at := time.Date(2026, 11, 28, 2, 0, 0, 500, time.FixedZone("CET", 3600))
	got := drainedPods([]corev1.Pod{
		owned("web", "cart-a", "ReplicaSet", "cart-7d9", "rs-1"),
		owned("db", "pg-0", "StatefulSet", "pg", "sts-1"),
		owned("web", "cart-b", "ReplicaSet", "cart-7d9", "rs-1"),
		bare,
	}, at)
	want := &v1alpha1.DrainedPods{At: metav1.NewTime(time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)), Unowned: 1, Owners: []v1alpha1.DrainedOwner{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "web", Name: "cart-7d9", UID: "rs-1", Pods: 2},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "db", Name: "pg", UID: "sts-1", Pods: 1},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drainedPods (-want +got):\n%s", diff)
	}

	// The annotation reads back as it was written; no drain removes it.
	var back v1alpha1.DrainedPods
	if err := json.Unmarshal([]byte(drainedAnnotation(got)), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, &back); diff != "" {
		t.Errorf("the annotation read back (-want +got):\n%s", diff)
	}
	if a := drainedAnnotation(nil); a != "" {
		t.Errorf("no drain: annotation %q, want none", a)
	}

	// Owners beyond the bound are counted, not listed.
	var many []corev1.Pod
	for i := range v1alpha1.MaxDrainedOwners + 3 {
		many = append(many, owned("web", "p", "ReplicaSet", "r", types.UID(rune('a'+i))), owned("web", "q", "ReplicaSet", "r", types.UID(rune('a'+i))))
	}
	d := drainedPods(many, at)
	if len(d.Owners) != v1alpha1.MaxDrainedOwners || d.More != 3 || d.Owners[0].Pods != 2 {
		t.Errorf("bounded: %d owners (first with %d pods), %d more; want %d, 2, 3", len(d.Owners), d.Owners[0].Pods, d.More, v1alpha1.MaxDrainedOwners)
	}
}
