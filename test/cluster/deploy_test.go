package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ndp-daemon, with the shipped DaemonSet, RBAC and admission policy, may
// change its own Node and MachineConfigNode and no other: the API server
// refuses the rest, whatever the ClusterRole allows.
func TestDaemonIsConfinedToItsOwnNode(t *testing.T) {
	ctx := context.Background()
	applyDaemonManifests(t)
	create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})

	// The daemon's pod on node-a, from the shipped DaemonSet's template
	// (there is no DaemonSet controller or kubelet: the pod only exists).
	var ds appsv1.DaemonSet
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-daemon"}, &ds); err != nil {
		t.Fatal(err)
	}
	checkDaemonPodSpec(t, &ds.Spec.Template.Spec)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "ndp-daemon-node-a", Labels: ds.Spec.Template.Labels},
		Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = "node-a"
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatalf("creating the daemon's pod from the DaemonSet's template: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	daemonA := asDaemon(t, daemonToken(t, pod))

	// The API server loads the policy and the role binding asynchronously:
	// until then, node-b's patch is allowed (or refused by RBAC).
	const otherNode = "ndp-daemon on node node-a may only change its own Node, MachineConfigNode and NodeHistory, not nodes node-b"
	untilRefused(t, "the daemon on node-a patching node-b", otherNode, func(i int) error {
		return annotateNode(daemonA, "node-b", fmt.Sprint("attempt-", i))
	})

	// Its own Node: annotations and cordon.
	if err := annotateNode(daemonA, "node-a", "mine"); err != nil {
		t.Errorf("the daemon on node-a annotating node-a: %v", err)
	}
	if err := daemonA.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`))); err != nil {
		t.Errorf("the daemon on node-a cordoning node-a: %v", err)
	}
	var a corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-a"}, &a); err != nil {
		t.Fatal(err)
	}
	if a.Annotations[daemonAnnotation] != "mine" || !a.Spec.Unschedulable {
		t.Errorf("node-a after the daemon's patches: annotations %v, unschedulable %v", a.Annotations, a.Spec.Unschedulable)
	}

	// Another Node: refused, and unchanged.
	var before, after corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-b"}, &before); err != nil {
		t.Fatal(err)
	}
	refused(t, "the daemon on node-a annotating node-b", annotateNode(daemonA, "node-b", "stolen"), otherNode)
	refused(t, "the daemon on node-a cordoning node-b",
		daemonA.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`))), otherNode)
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-b"}, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("node-b changed: annotations %v, unschedulable %v", after.Annotations, after.Spec.Unschedulable)
	}

	// Its own MachineConfigNode, created by server-side apply, and its
	// status; another node's refused, whether it exists or not.
	t.Cleanup(func() {
		for _, n := range []string{"node-a", "node-b"} {
			_ = k8s.Delete(context.Background(), mcnNamed(n))
		}
	})
	if err := applyMCN(daemonA, "node-a", false); err != nil {
		t.Errorf("the daemon on node-a applying MachineConfigNode node-a: %v", err)
	}
	if err := applyMCN(daemonA, "node-a", true); err != nil {
		t.Errorf("the daemon on node-a applying the status of MachineConfigNode node-a: %v", err)
	}
	got := mcnNamed("node-a")
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-a"}, got); err != nil {
		t.Errorf("MachineConfigNode node-a: %v", err)
	} else if conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); len(conds) != 1 {
		t.Errorf("MachineConfigNode node-a's status: %v", got.Object["status"])
	}
	const otherMCN = "ndp-daemon on node node-a may only change its own Node, MachineConfigNode and NodeHistory, not machineconfignodes node-b"
	refused(t, "the daemon on node-a creating MachineConfigNode node-b", applyMCN(daemonA, "node-b", false), otherMCN)
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-b"}, mcnNamed("node-b")); !apierrors.IsNotFound(err) {
		t.Errorf("MachineConfigNode node-b after the refused create: %v", err)
	}
	// node-b's own, written by someone else: the daemon on node-a may not
	// touch it either, spec or status.
	if err := applyMCN(k8s, "node-b", false); err != nil {
		t.Fatal(err)
	}
	refused(t, "the daemon on node-a applying MachineConfigNode node-b", applyMCN(daemonA, "node-b", false), otherMCN)
	refused(t, "the daemon on node-a applying the status of MachineConfigNode node-b", applyMCN(daemonA, "node-b", true), otherMCN)

	// DELETE is judged by the object deleted. The daemon's role grants no
	// delete: grant it here, to see the policy decide.
	deleter := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ndp-daemon-test-delete"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfignodes"}, Verbs: []string{"delete"}}}}
	create(t, deleter)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ndp-daemon-test-delete"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: deleter.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-daemon"}}})
	untilRefused(t, "the daemon on node-a deleting MachineConfigNode node-b", otherMCN, func(int) error {
		err := daemonA.Delete(ctx, mcnNamed("node-b"))
		if err == nil {
			t.Fatal("the daemon on node-a deleted MachineConfigNode node-b")
		}
		return err
	})
	if err := daemonA.Delete(ctx, mcnNamed("node-a")); err != nil {
		t.Errorf("the daemon on node-a deleting MachineConfigNode node-a: %v", err)
	}

	// A token of the same service account bound to no pod names no node:
	// it may change nothing, not even node-a.
	unbound := asDaemon(t, daemonToken(t, nil))
	const noNode = "its token names no node"
	refused(t, "an unbound ndp-daemon token annotating node-a", annotateNode(unbound, "node-a", "unbound"), noNode)
	refused(t, "an unbound ndp-daemon token applying MachineConfigNode node-a", applyMCN(unbound, "node-a", false), noNode)
	// It still authenticates and is authorized: reading is not refused.
	if err := unbound.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}); err != nil {
		t.Errorf("an unbound ndp-daemon token reading node-a: %v", err)
	}

	// Others, with the same rights, are not confined: the administrator
	// here, and so the controller.
	if err := annotateNode(k8s, "node-b", "admin"); err != nil {
		t.Errorf("the administrator annotating node-b: %v", err)
	}
}

// checkDaemonPodSpec checks what the daemon relies on in the DaemonSet's
// pod template.
func checkDaemonPodSpec(t *testing.T, spec *corev1.PodSpec) {
	t.Helper()
	if spec.ServiceAccountName != "ndp-daemon" {
		t.Errorf("serviceAccountName %q, want ndp-daemon (the account the admission policy confines)", spec.ServiceAccountName)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == ""
	}) {
		t.Errorf("tolerations %v: want one that tolerates every taint", spec.Tolerations)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if !slices.Contains(c.Args, "--root=/rootfs") {
		t.Errorf("args %v: want --root=/rootfs", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && m.MountPath == "/rootfs" && v.HostPath != nil && v.HostPath.Path == "/" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the host's / is not mounted at /rootfs: mounts %v", c.VolumeMounts)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Errorf("env %v: want NODE_NAME from spec.nodeName", c.Env)
	}
	if c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.Privileged, false) {
		t.Errorf("the container is not privileged")
	}
}
