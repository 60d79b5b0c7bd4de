package rolloutgates

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// What an owner's object says of its pods: settled only when its status
// is of its current spec, counts every pod it wants and all of them Ready;
// gone when deleted or another object of its name.
func TestViewOwner(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}
	rs := func(gen, observed int64, want *int32, replicas, ready int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: gen},
			Spec:       appsv1.ReplicaSetSpec{Replicas: want, Selector: sel},
			Status:     appsv1.ReplicaSetStatus{ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready},
		}
	}
	deleting := rs(1, 1, ptr.To[int32](2), 2, 2)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: 3},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"pg"}}}}},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 3},
	}
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: 1},
		Spec:       corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "old"}},
		Status:     corev1.ReplicationControllerStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 0},
	}
	noSelector := rs(1, 1, ptr.To[int32](1), 1, 0)
	noSelector.Spec.Selector = &metav1.LabelSelector{}
	for _, tc := range []struct {
		name     string
		obj      client.Object
		uid      types.UID
		gone     bool
		settled  bool
		selector string
	}{
		{"all Ready", rs(1, 1, ptr.To[int32](2), 2, 2), "u", false, true, "app=cart"},
		{"one not Ready", rs(1, 1, ptr.To[int32](2), 2, 1), "u", false, false, "app=cart"},
		{"one missing", rs(1, 1, ptr.To[int32](2), 1, 1), "u", false, false, "app=cart"},
		{"status of an older spec", rs(2, 1, ptr.To[int32](3), 2, 2), "u", false, false, "app=cart"},
		{"scaled to zero", rs(1, 1, ptr.To[int32](0), 0, 0), "u", false, true, "app=cart"},
		{"replicas unset: one", rs(1, 1, nil, 0, 0), "u", false, false, "app=cart"},
		{"surplus pod terminating, the rest Ready", rs(1, 1, ptr.To[int32](1), 1, 1), "u", false, true, "app=cart"},
		{"another object of its name", rs(1, 1, ptr.To[int32](2), 2, 2), "other", true, false, ""},
		{"being deleted", deleting, "u", true, false, ""},
		{"StatefulSet all Ready", sts, "u", false, true, "app in (pg)"},
		{"ReplicationController not Ready", rc, "u", false, false, "app=old"},
		{"empty selector: the namespace's pods", noSelector, "u", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := viewOwner(tc.obj, tc.uid)
			got := ""
			if v.selector != nil {
				got = v.selector.String()
			}
			if v.gone != tc.gone || v.settled != tc.settled || got != tc.selector {
				t.Errorf("gone %t, settled %t, selector %q; want %t, %t, %q", v.gone, v.settled, got, tc.gone, tc.settled, tc.selector)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind, want string
	}{
		{"apps/v1", "ReplicaSet", "ReplicaSet.apps"},
		{"", "ReplicaSet", "ReplicaSet.apps"}, // an older daemon's record
		{"", "StatefulSet", "StatefulSet.apps"},
		{"v1", "ReplicationController", "ReplicationController"},
		{"", "ReplicationController", "ReplicationController"},
		{"batch/v1", "Job", "Job.batch"},
		{"example.com/v1", "ReplicaSet", "ReplicaSet.example.com"}, // not apps': its pods are listed
		{"a/b/c", "ReplicaSet", "ReplicaSet.?a/b/c"},
	} {
		if got := kindOf(v1alpha1.DrainedOwner{APIVersion: tc.apiVersion, Kind: tc.kind}).String(); got != tc.want {
			t.Errorf("kindOf(%q, %q) = %q, want %q", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

// countingReader records the requests a reader makes.
type countingReader struct {
	client.Reader
	mu   sync.Mutex
	reqs []string
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.add(fmt.Sprintf("GET %T %s", obj, key))
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	sel := ""
	if lo.LabelSelector != nil {
		sel = " " + lo.LabelSelector.String()
	}
	c.add(fmt.Sprintf("LIST %T %s%s", list, lo.Namespace, sel))
	return c.Reader.List(ctx, list, opts...)
}

func (c *countingReader) add(r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, r)
}

func (c *countingReader) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reqs
	c.reqs = nil
	slices.Sort(r)
	return r
}

// The drained pods' owners and pods, read from a real API server without
// a watch: a settled owner's pods are not read; the others' pods are
// listed by the owner's selector (a Job's: its namespace) and judged one
// by one; a deleted owner is not waited for.
func TestDrainedNotReady(t *testing.T) {
	c, mk := apiServer(t)
	ctx := context.Background()
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/" + app}}}}
	}
	// Nothing runs these ReplicaSets here: the test writes their status as
	// the ReplicaSet controller would, and makes their pods.
	replicaSet := func(name string, replicas, ready int32) *appsv1.ReplicaSet {
		t.Helper()
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name}, Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: template(name)}}
		mk(rs)
		setStatus(t, c, rs, replicas, ready)
		return rs
	}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	pod := func(name string, owner client.Object, kind string, ready bool) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, Labels: map[string]string{"app": owner.GetName()},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}},
			Spec: template(owner.GetName()).Spec}
		mk(p)
		if ready {
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			if err := c.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	settled := replicaSet("settled", 2, 2)
	pod("settled-a", settled, "ReplicaSet", true)
	pod("settled-b", settled, "ReplicaSet", true)
	cart := replicaSet("cart", 2, 1)                   // its other pod, elsewhere, is Ready
	coming := pod("cart-b", cart, "ReplicaSet", false) // the replacement, on its way
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "report"}, Spec: batchv1.JobSpec{Template: template("report")}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	mk(job)
	pod("report-a", job, "Job", false)

	owner := func(o client.Object, apiVersion, kind string) v1alpha1.DrainedOwner {
		return v1alpha1.DrainedOwner{APIVersion: apiVersion, Kind: kind, Namespace: "web", Name: o.GetName(), UID: o.GetUID(), Pods: 1}
	}
	d := &v1alpha1.DrainedPods{At: metav1.NewTime(t0), Owners: []v1alpha1.DrainedOwner{
		owner(settled, "apps/v1", "ReplicaSet"),
		owner(cart, "apps/v1", "ReplicaSet"),
		owner(job, "batch/v1", "Job"),
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "web", Name: "deleted", UID: "gone", Pods: 3},
	}}
	r := &countingReader{Reader: c}
	check := func(what string, want []string, wantReqs []string) {
		t.Helper()
		got, err := DrainedNotReady(ctx, r, d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: not Ready (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff(wantReqs, r.take()); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", what, diff)
		}
	}
	getRS := func(name string) string { return "GET *v1.ReplicaSet web/" + name }
	check("a replacement on its way, a Job's pod on its way", []string{
		"ReplicaSet web/cart (0 of 1 Ready)", "Job web/report (0 of 1 Ready)",
	}, []string{
		getRS("cart"), getRS("deleted"), getRS("settled"),
		"LIST *v1.PodList web",          // a Job: its namespace's pods
		"LIST *v1.PodList web app=cart", // by the owner's selector
	})

	// The replacement Ready: the ReplicaSet's status not written yet, its
	// pods tell.
	coming.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, coming); err != nil {
		t.Fatal(err)
	}
	d.Owners = d.Owners[:2]
	check("the replacement Ready", nil, []string{getRS("cart"), getRS("settled"), "LIST *v1.PodList web app=cart"})

	// Its status written: settled, its pods no longer read.
	setStatus(t, c, cart, 2, 2)
	check("the ReplicaSet settled", nil, []string{getRS("cart"), getRS("settled")})

	// An owner of another UID (deleted, made again): not this drain's.
	if err := c.Delete(ctx, cart); err != nil {
		t.Fatal(err)
	}
	again := replicaSet("cart", 2, 0)
	if again.UID == cart.UID {
		t.Fatal("the ReplicaSet made again has its old UID")
	}
	check("the owner made again", nil, []string{getRS("cart"), getRS("settled")})

	if got, err := DrainedNotReady(ctx, r, nil); err != nil || got != nil {
		t.Errorf("no drain: %v, %v", got, err)
	}
	if reqs := r.take(); len(reqs) != 0 {
		t.Errorf("no drain: requests %s", strings.Join(reqs, ", "))
	}
}

// setStatus writes a ReplicaSet's status as its controller would.
func setStatus(t *testing.T, c client.Client, rs *appsv1.ReplicaSet, replicas, ready int32) {
	t.Helper()
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: replicas, ReadyReplicas: ready}
	if err := c.Status().Update(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
}
