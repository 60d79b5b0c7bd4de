package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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

// A drain's deadline counts from its step's start as journaled, so that a
// daemon restarted mid-drain keeps it; no timeout, none.
func TestDrainDeadline(t *testing.T) {
	started := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		timeout string
		started *time.Time
		want    time.Time
		action  v1alpha1.DrainTimeoutAction
	}{
		{"no timeout", "", &started, time.Time{}, ""},
		{"skip after 30m", "30m0s;Skip", &started, started.Add(30 * time.Minute), v1alpha1.DrainTimeoutSkip},
		{"delete after 90s", "1m30s;DeletePods", &started, started.Add(90 * time.Second), v1alpha1.DrainTimeoutDeletePods},
		{"not started", "30m0s;Skip", nil, time.Time{}, ""},
		{"unreadable: none", "soon;Skip", &started, time.Time{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := &Journal{DrainTimeout: c.timeout}
			dt, at := j.drainDeadline(&Step{Name: StepDrain, Started: c.started != nil, StartedAt: c.started})
			if !at.Equal(c.want) || dt.Action != c.action {
				t.Errorf("deadline %v (%s), want %v (%s)", at, dt.Action, c.want, c.action)
			}
		})
	}
}

func TestProtecting(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "db-0", Labels: map[string]string{"app": "db", "tier": "data"}}}
	pdb := func(ns, name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	for _, c := range []struct {
		name string
		pdbs []policyv1.PodDisruptionBudget
		want string
	}{
		{"none", nil, ""},
		{"matching labels", []policyv1.PodDisruptionBudget{pdb("web", "db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})}, "web/db"},
		{"other labels", []policyv1.PodDisruptionBudget{pdb("web", "cart", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}})}, ""},
		{"another namespace", []policyv1.PodDisruptionBudget{pdb("shop", "db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})}, ""},
		{"no selector selects nothing", []policyv1.PodDisruptionBudget{pdb("web", "nil", nil)}, ""},
		{"an empty selector selects all, sorted", []policyv1.PodDisruptionBudget{pdb("web", "zz-all", &metav1.LabelSelector{}),
			pdb("web", "data", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"data"}}}})}, "web/data web/zz-all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(protecting(pod, c.pdbs), " "); got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
		})
	}
}

func TestPodList(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("ns/p%d", i))
	}
	for _, c := range []struct {
		pods []string
		want string
	}{
		{[]string{"web/a"}, "1 pods still to evict (web/a)"},
		{many, "12 pods still to evict (ns/p0, ns/p1, ns/p2, ns/p3, ns/p4, ns/p5, ns/p6, ns/p7, ns/p8, ns/p9, and 2 more)"},
	} {
		if got := podList(c.pods); got != c.want {
			t.Errorf("%q\nwant %q", got, c.want)
		}
	}
}

// The library starts a pod's eviction again only after it was refused:
// the second start of any pod's eviction in an attempt reports, once.
func TestRefusals(t *testing.T) {
	pod := func(uid string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	for _, tc := range []struct {
		name   string
		starts []string // "uid" an eviction, "uid-" a deletion
		want   int
	}{
		{"each evicted at once", []string{"a", "b", "c"}, 0},
		{"one refused", []string{"a", "b", "a"}, 1},
		{"refused again and again", []string{"a", "a", "b", "b", "a"}, 1},
		{"deletions are not refused", []string{"a-", "a-"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			started := refusals(func() { n++ })
			for _, s := range tc.starts {
				uid, deletion := strings.CutSuffix(s, "-")
				started(pod(uid), !deletion)
			}
			if n != tc.want {
				t.Errorf("reported %d times, want %d", n, tc.want)
			}
		})
	}
}
