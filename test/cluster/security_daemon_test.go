package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/google/go-cmp/cmp"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// The daemon's admission policies (manifests/admission/daemon-own-node.yaml).
const (
	ownNodePolicy   = "ndp-daemon-own-node"
	nodeFieldPolicy = "ndp-daemon-node-fields"
	ownPodsPolicy   = "ndp-daemon-own-pods"
	ownEventsPolicy = "ndp-daemon-own-events"
)

// workloadPod is a running pod on node in namespace ns, created as the
// administrator; the test removes it at the end (at once, as a kubelet
// would finish a pod that an eviction left Terminating).
func workloadPod(t *testing.T, ns, name, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "ndp-security"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// confinedDaemon applies the daemon's shipped manifests (role, DaemonSet,
// admission policies) with the real kubectl, creates the Nodes own and
// other (each in a pool of its own, with a taint), and the daemon's pod on
// own from the DaemonSet's template. It returns that pod, once the API
// server enforces the role and the policies on its token: its own Node and
// MachineConfigNode, its Node's fields and its events (the pod policy is
// only reachable with a delete the role does not grant; see
// grantPodDelete).
func confinedDaemon(t *testing.T, own, other string) (*corev1.Pod, client.Client) {
	t.Helper()
	ctx := context.Background()
	applyDaemonManifests(t)
	for _, n := range []string{own, other} {
		create(t, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n,
				// A pool no MachineConfigPool of the other tests selects.
				Labels: map[string]string{"node-role.kubernetes.io/security-" + n: ""},
				Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: "rendered-security-1", ndpmcv1.DesiredConfigAnnotation: "rendered-security-1",
					ndpmcv1.StateAnnotation: ndpmcv1.StateDone, "k8s.ovn.org/node-subnets": `{"default":["10.128.2.0/23"]}`}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "ndp.dev/security", Value: "dedicated", Effect: corev1.TaintEffectNoSchedule}}},
		})
	}
	var ds appsv1.DaemonSet
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-daemon"}, &ds); err != nil {
		t.Fatal(err)
	}
	// Owned by its DaemonSet, as the DaemonSet controller makes it: the
	// drain leaves it alone.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "ndp-daemon-" + own, Labels: ds.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = own
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatalf("creating the daemon's pod from the DaemonSet's template: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	d := asDaemon(t, daemonToken(t, pod))

	// Each policy in force, probed with server dry-runs: nothing changes
	// while the API server is still loading them.
	dry := client.DryRunAll
	untilRefused(t, "the daemon patching another Node", "may only change its own Node, MachineConfigNode and NodeHistory, not nodes "+other, func(i int) error {
		return rawPatch(d, nodeNamed(other), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"probe-%d"}}}`, daemonAnnotation, i), dry)
	})
	untilRefused(t, "the daemon labelling its Node", "may not change the labels of node "+own, func(i int) error {
		return rawPatch(d, nodeNamed(own), types.MergePatchType, fmt.Sprintf(`{"metadata":{"labels":{"ndp.dev/probe":"%d"}}}`, i), dry)
	})
	untilRefused(t, "the daemon recording an event about another Node", "may only record events about that Node, not about Node "+other, func(int) error {
		return d.Create(ctx, anEvent("Node", "v1", "", other), client.DryRunAll)
	})
	return pod, d
}

// waitPodDeleteConfined waits until the pod policy refuses a (dry-run)
// deletion of victim, a pod on another node, which the role allows.
func waitPodDeleteConfined(t *testing.T, d client.Client, own string, victim *corev1.Pod) {
	t.Helper()
	untilRefused(t, "the daemon deleting a pod on another node", "ndp-daemon on node "+own+" may only delete pods on that node", func(int) error {
		return d.Delete(context.Background(), victim, client.DryRunAll)
	})
}

// What a compromised ndp-daemon can and cannot do with its pod-bound token
// (the one its pod's projected volume holds), with the shipped role and
// admission policies. It is root on its node, so it also holds the
// kubelet's credentials: the rows show where the daemon's token stays within
// what the node's own identity may do (and where it does not: the residual
// risks, allowed below and stated in docs/reliability.md).
func TestSecurityBoundariesOfTheDaemon(t *testing.T) {
	const own, other = "sec-a", "sec-b"
	ensureNamespace(t, "ndp-security")
	webA := workloadPod(t, "ndp-security", "web-a", own)
	webB := workloadPod(t, "ndp-security", "web-b", other)
	victimA := workloadPod(t, "ndp-security", "victim-a", own)
	victimB := workloadPod(t, "ndp-security", "victim-b", other)
	daemonPod, d := confinedDaemon(t, own, other)
	unbound := asDaemon(t, daemonToken(t, nil))
	token := daemonToken(t, daemonPod)

	ctx := context.Background()
	create(t, sourceMC("rendered-security-1", "security-none").Build())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-security", Name: "pull-secret"}, StringData: map[string]string{".dockerconfigjson": "{}"}}
	create(t, secret)
	var before, mineBefore corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: other}, &before); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &mineBefore); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mcnNamed(own)) })
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}})
	})
	// Another node's NodeHistory, as its own daemon would have created it.
	otherHistory := other
	create(t, nodeHistory(other, &before))
	merge, strategic := types.MergePatchType, types.StrategicMergePatchType
	cantChange := "may only change its own Node, MachineConfigNode and NodeHistory, not "

	runBoundaries(t, []boundary{
		// Its own Node: what the daemon does.
		{"reads its Node", func(ctx context.Context) error { return d.Get(ctx, client.ObjectKey{Name: own}, &corev1.Node{}) }, allowed},
		{"sets its state, reason and currentConfig annotations", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/state":"Working","machineconfiguration.openshift.io/reason":"x","machineconfiguration.openshift.io/currentConfig":"rendered-security-1"}}}`)
		}, allowed},
		{"removes its reason annotation", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/reason":null}}}`)
		}, allowed},
		{"reports the reboot its host asks for", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/reboot-required":"2026-11-30T01:00:00Z","ndp.dev/reboot-required-by":"/var/run/reboot-required (linux-image-amd64)"}}}`)
		}, allowed},
		{"records a drain it gave up at its timeout", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/drain-skipped":"rendered-security-2","ndp.dev/drain-skipped-reason":"the drain timed out"}}}`)
		}, allowed},
		{"removes the reboot grant it used", func(context.Context) error {
			if err := rawPatch(k8s, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/reboot-granted":"2026-11-30T01:00:00Z;drain"}}}`); err != nil {
				return fmt.Errorf("the controller's grant: %w", err)
			}
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/reboot-granted":null}}}`)
		}, allowed},
		{"gives up its update: desiredConfig back to its currentConfig", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/currentConfig":"rendered-security-1","machineconfiguration.openshift.io/desiredConfig":"rendered-security-1"}}}`)
		}, allowed},
		{"sends itself to the config it claims to run", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/currentConfig":"rendered-security-1","machineconfiguration.openshift.io/desiredConfig":"rendered-master-1"}}}`)
		}, byPolicy(nodeFieldPolicy, "not machineconfiguration.openshift.io/desiredConfig")},
		{"grants itself a reboot", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/reboot-granted":"2026-11-30T01:00:00Z;no-drain"}}}`)
		}, byPolicy(nodeFieldPolicy, "not ndp.dev/reboot-granted")},
		{"sets its own drain timeout", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"ndp.dev/drain-timeout":"1s;DeletePods"}}}`)
		}, byPolicy(nodeFieldPolicy, "not ndp.dev/drain-timeout")},
		{"cordons its Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), strategic, `{"spec":{"unschedulable":true}}`)
		}, allowed},
		{"uncordons its Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), strategic, `{"spec":{"unschedulable":null}}`)
		}, allowed},
		// Its own Node: what it may not change.
		{"relabels its Node into the master pool", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"labels":{"node-role.kubernetes.io/master":""}}}`)
		}, byPolicy(nodeFieldPolicy, "may not change the labels of node "+own+" (they choose its pool and its workloads): node-role.kubernetes.io/master")},
		{"takes its Node out of its pool", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"labels":{"node-role.kubernetes.io/security-`+own+`":null}}}`)
		}, byPolicy(nodeFieldPolicy, "node-role.kubernetes.io/security-"+own)},
		{"removes its Node's taints", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"spec":{"taints":null}}`)
		}, byPolicy(nodeFieldPolicy, "may not change the taints of node "+own)},
		{"adds a taint to its Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), strategic, `{"spec":{"taints":[{"key":"ndp.dev/other","effect":"NoExecute"}]}}`)
		}, byPolicy(nodeFieldPolicy, "may not change the taints of node "+own)},
		{"sends its Node to another config (desiredConfig)", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-master-1"}}}`)
		}, byPolicy(nodeFieldPolicy, "not machineconfiguration.openshift.io/desiredConfig")},
		{"changes another component's annotation of its Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"k8s.ovn.org/node-subnets":null}}}`)
		}, byPolicy(nodeFieldPolicy, "not k8s.ovn.org/node-subnets")},
		{"sets its Node's providerID", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"spec":{"providerID":"aws:///us-east-1a/i-0123"}}`)
		}, byPolicy(nodeFieldPolicy, "may only change spec.unschedulable and its own annotations of node "+own)},
		{"sets its Node's pod CIDR", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"spec":{"podCIDR":"10.244.7.0/24"}}`)
		}, byPolicy(nodeFieldPolicy, "may only change spec.unschedulable and its own annotations of node "+own)},
		{"gives its Node an owner", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"default","uid":"4f1e6c1a-0000-4000-8000-000000000001"}]}}`)
		}, byPolicy(nodeFieldPolicy, "may only change spec.unschedulable and its own annotations of node "+own)},
		{"adds a finalizer to its Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"finalizers":["ndp.dev/keep"]}}`)
		}, byPolicy(nodeFieldPolicy, "may only change spec.unschedulable and its own annotations of node "+own)},
		{"replaces its Node (update)", func(ctx context.Context) error {
			var n corev1.Node
			if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &n); err != nil {
				return err
			}
			return d.Update(ctx, &n)
		}, byRBAC(`update resource "nodes"`)},
		{"writes its Node's status", func(ctx context.Context) error {
			return d.Status().Patch(ctx, nodeNamed(own), client.RawPatch(merge, []byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`)))
		}, byRBAC(`patch resource "nodes/status"`)},
		{"deletes its Node", func(ctx context.Context) error { return d.Delete(ctx, nodeNamed(own)) }, byRBAC(`delete resource "nodes"`)},
		{"creates a Node", func(ctx context.Context) error { return d.Create(ctx, nodeNamed("sec-new")) }, byRBAC(`create resource "nodes"`)},
		// Other Nodes.
		{"reads another Node (residual: every Node is readable)", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKey{Name: other}, &corev1.Node{})
		}, allowed},
		{"annotates another Node", func(context.Context) error { return annotateNode(d, other, "stolen") }, byPolicy(ownNodePolicy, cantChange+"nodes "+other)},
		{"cordons another Node", func(context.Context) error {
			return rawPatch(d, nodeNamed(other), strategic, `{"spec":{"unschedulable":true}}`)
		}, byPolicy(ownNodePolicy, cantChange+"nodes "+other)},

		// MachineConfigNodes.
		{"applies its MachineConfigNode", func(context.Context) error { return applyMCN(d, own, false) }, allowed},
		{"applies its MachineConfigNode's status", func(context.Context) error { return applyMCN(d, own, true) }, allowed},
		{"applies another node's MachineConfigNode", func(context.Context) error { return applyMCN(d, other, false) }, byPolicy(ownNodePolicy, cantChange+"machineconfignodes "+other)},
		{"deletes its MachineConfigNode", func(ctx context.Context) error { return d.Delete(ctx, mcnNamed(own)) }, byRBAC(`delete resource "machineconfignodes"`)},

		// NodeHistories: the record of its updates (created by the daemon,
		// owned by its Node; then only its status is written).
		{"creates its NodeHistory owned by another Node", func(ctx context.Context) error {
			return d.Create(ctx, nodeHistory(own, &before))
		}, byPolicy(ownNodePolicy, "ndp-daemon on node "+own+" may only make its Node the owner of its NodeHistory")},
		{"creates its NodeHistory, owned by its Node", func(ctx context.Context) error {
			return d.Create(ctx, nodeHistory(own, &mineBefore))
		}, allowed},
		{"reads its NodeHistory", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKey{Name: own}, &v1alpha1.NodeHistory{})
		}, allowed},
		{"records an update in its NodeHistory", func(ctx context.Context) error {
			return d.Status().Patch(ctx, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}}, client.RawPatch(merge, []byte(historyPatch)))
		}, allowed},
		{"creates another node's NodeHistory", func(ctx context.Context) error {
			return d.Create(ctx, nodeHistory(other, &before))
		}, byPolicy(ownNodePolicy, cantChange+"nodehistories "+other)},
		{"records an update in another node's NodeHistory", func(ctx context.Context) error {
			return d.Status().Patch(ctx, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: otherHistory}}, client.RawPatch(merge, []byte(historyPatch)))
		}, byPolicy(ownNodePolicy, cantChange+"nodehistories "+otherHistory)},
		{"gives its NodeHistory another owner", func(context.Context) error {
			return rawPatch(d, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}}, merge, `{"metadata":{"ownerReferences":null}}`)
		}, byRBAC(`patch resource "nodehistories"`)},
		{"deletes its NodeHistory", func(ctx context.Context) error {
			return d.Delete(ctx, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}})
		}, byRBAC(`delete resource "nodehistories"`)},
		{"lists NodeHistories", func(ctx context.Context) error { return d.List(ctx, &v1alpha1.NodeHistoryList{}) }, byRBAC(`list resource "nodehistories"`)},

		// Events.
		{"records an event about its Node", func(ctx context.Context) error { return d.Create(ctx, anEvent("Node", "v1", "", own)) }, allowed},
		{"records an event about another Node", func(ctx context.Context) error { return d.Create(ctx, anEvent("Node", "v1", "", other)) },
			byPolicy(ownEventsPolicy, "ndp-daemon on node "+own+" may only record events about that Node, not about Node "+other)},
		{"records an event about a pod", func(ctx context.Context) error {
			return d.Create(ctx, anEvent("Pod", "v1", "ndp-security", webB.Name))
		}, byPolicy(ownEventsPolicy, "not about Pod "+webB.Name)},
		{"records a core (v1) event", func(ctx context.Context) error {
			return d.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "ndp-security-"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: own}, Reason: "Probe", Message: "security test"})
		}, byRBAC(`create resource "events" in API group ""`)},

		// Pods: the drain.
		{"lists the pods on its node", func(ctx context.Context) error {
			return d.List(ctx, &corev1.PodList{}, client.MatchingFields{"spec.nodeName": own})
		}, allowed},
		{"lists every pod (residual: RBAC cannot limit a list to one node)", func(ctx context.Context) error {
			return d.List(ctx, &corev1.PodList{})
		}, allowed},
		{"reads its DaemonSet (the drain checks DaemonSet pods' owners)", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-daemon"}, &appsv1.DaemonSet{})
		}, allowed},
		{"watches for the Machine Config Operator (lists its ClusterOperator and DaemonSet by name, as mcoguard.Guard)", func(ctx context.Context) error {
			if err := d.List(ctx, &configv1.ClusterOperatorList{}, client.MatchingFields{"metadata.name": mcoguard.ClusterOperatorName}); err != nil {
				return err
			}
			return d.List(ctx, &appsv1.DaemonSetList{}, client.InNamespace(mcoguard.DaemonSetNamespace), client.MatchingFields{"metadata.name": mcoguard.DaemonSetName})
		}, allowed},
		{"lists every ClusterOperator", func(ctx context.Context) error {
			return d.List(ctx, &configv1.ClusterOperatorList{})
		}, byRBAC(`list resource "clusteroperators"`)},
		{"reads another ClusterOperator", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKey{Name: "ndp"}, &configv1.ClusterOperator{})
		}, byRBAC(`get resource "clusteroperators"`)},
		{"evicts a pod on its node", func(ctx context.Context) error { return evict(ctx, d, webA) }, allowed},
		{"evicts a pod on another node (residual: an Eviction names no node)", func(ctx context.Context) error { return evict(ctx, d, webB) }, allowed},
		{"creates a pod", func(ctx context.Context) error {
			return d.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-escape"},
				Spec: corev1.PodSpec{NodeName: other, ServiceAccountName: "ndp-daemon", Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
		}, byRBAC(`create resource "pods"`)},
		{"changes its DaemonSet", func(context.Context) error {
			return rawPatch(d, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "ndp-daemon"}}, merge, `{"spec":{"template":{"spec":{"containers":[{"name":"ndp-daemon","image":"evil"}]}}}}`)
		}, byRBAC(`patch resource "daemonsets"`)},

		// MachineConfigs, pools, policies.
		{"reads a MachineConfig by name (residual: any one, secrets in it included)", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKey{Name: "rendered-security-1"}, &ndpmcv1.MachineConfig{})
		}, allowed},
		{"lists MachineConfigs", func(ctx context.Context) error { return d.List(ctx, &ndpmcv1.MachineConfigList{}) }, byRBAC(`list resource "machineconfigs"`)},
		{"changes a MachineConfig", func(context.Context) error {
			return rawPatch(d, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-security-1"}}, merge, `{"metadata":{"labels":{"x":"y"}}}`)
		}, byRBAC(`patch resource "machineconfigs"`)},
		{"writes a plan into a MachineConfig's status", func(ctx context.Context) error {
			return d.Status().Patch(ctx, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-security-1"}}, client.RawPatch(merge, []byte(`{"status":{"postConfigActions":[]}}`)))
		}, byRBAC(`patch resource "machineconfigs/status"`)},
		{"creates a MachineConfig", func(ctx context.Context) error {
			return d.Create(ctx, sourceMC("99-security-evil", "security-none").Build())
		}, byRBAC(`create resource "machineconfigs"`)},
		{"reads MachineConfigPools", func(ctx context.Context) error {
			return d.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPoolList"}})
		}, byRBAC(`list resource "machineconfigpools"`)},
		{"pauses or changes a pool", func(context.Context) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("machineconfiguration.openshift.io/v1")
			u.SetKind("MachineConfigPool")
			u.SetName("master")
			return rawPatch(d, u, merge, `{"spec":{"paused":true}}`)
		}, byRBAC(`patch resource "machineconfigpools"`)},
		{"reads NodeDisruptionPolicies", func(ctx context.Context) error { return d.List(ctx, &v1alpha1.NodeDisruptionPolicyList{}) }, byRBAC(`list resource "nodedisruptionpolicies"`)},
		{"creates a NodeDisruptionPolicy", func(ctx context.Context) error { return d.Create(ctx, newPolicy("security-evil", chronySpec())) }, byRBAC(`create resource "nodedisruptionpolicies"`)},

		// Secrets and configuration.
		{"reads a Secret", func(ctx context.Context) error {
			return d.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
		}, byRBAC(`get resource "secrets"`)},
		{"lists Secrets", func(ctx context.Context) error { return d.List(ctx, &corev1.SecretList{}) }, byRBAC(`list resource "secrets"`)},
		{"reads ConfigMaps", func(ctx context.Context) error { return d.List(ctx, &corev1.ConfigMapList{}) }, byRBAC(`list resource "configmaps"`)},

		// Escalation.
		{"binds itself to cluster-admin", func(ctx context.Context) error {
			return d.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-daemon"}}})
		}, byRBAC(`create resource "clusterrolebindings"`)},
		{"creates a RoleBinding in its namespace", func(ctx context.Context) error {
			return d.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-daemon"}}})
		}, byRBAC(`create resource "rolebindings"`)},
		{"widens its own ClusterRole", func(context.Context) error {
			return rawPatch(d, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ndp-daemon"}}, merge, `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`)
		}, byRBAC(`patch resource "clusterroles"`)},
		{"lifts its admission policy", func(context.Context) error {
			return rawPatch(d, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ownNodePolicy}}, merge, `{"spec":{"validationActions":["Audit"]}}`)
		}, byRBAC(`patch resource "validatingadmissionpolicybindings"`)},
		{"impersonates the administrator", func(ctx context.Context) error {
			_, err := impersonating(t, restConfig, token).CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
			return err
		}, byRBAC("impersonate")}, // "impersonate resource users", or with constrained impersonation (1.35+) "impersonate-on:..."
		{"mints a token of its account bound to a pod on another node", func(ctx context.Context) error {
			return tokenFor(ctx, d, "ndp-system", "ndp-daemon", webB)
		}, byRBAC(`create resource "serviceaccounts/token"`)},
		{"mints a token of another service account", func(ctx context.Context) error {
			return tokenFor(ctx, d, "ndp-system", "ndp-controller", nil)
		}, byRBAC(`create resource "serviceaccounts/token"`)},
		{"renews another node's heartbeat Lease", func(ctx context.Context) error {
			return d.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: other}})
		}, byRBAC(`create resource "leases"`)},

		// A token of its account that no pod on a node holds.
		{"unbound token: annotates a Node", func(context.Context) error { return annotateNode(unbound, own, "unbound") },
			byPolicy(ownNodePolicy, "its token names no node")},
		{"unbound token: applies a MachineConfigNode", func(context.Context) error { return applyMCN(unbound, own, false) },
			byPolicy(ownNodePolicy, "its token names no node")},
		{"unbound token: records an event about a Node", func(ctx context.Context) error { return unbound.Create(ctx, anEvent("Node", "v1", "", own)) },
			byPolicy(ownEventsPolicy, "ndp-daemon on node (none")},
		{"unbound token: records an update in a NodeHistory", func(ctx context.Context) error {
			return unbound.Status().Patch(ctx, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}}, client.RawPatch(merge, []byte(historyPatch)))
		}, byPolicy(ownNodePolicy, "its token names no node")},
	})

	// The role grants it a delete of pods (a drain past its timeout under
	// onDrainTimeout DeletePods): the policy confines that to its node.
	waitPodDeleteConfined(t, d, own, victimB)
	runBoundaries(t, []boundary{
		{"deletes a pod on another node", func(ctx context.Context) error { return d.Delete(ctx, victimB) },
			byPolicy(ownPodsPolicy, "ndp-daemon on node "+own+" may only delete pods on that node, not pod ndp-security/"+victimB.Name+" on node "+other)},
		{"unbound token: deletes a pod", func(ctx context.Context) error { return unbound.Delete(ctx, victimA) },
			byPolicy(ownPodsPolicy, "ndp-daemon on node (none")},
		{"deletes a pod on its node", func(ctx context.Context) error { return d.Delete(ctx, victimA) }, allowed},
	})

	// What was refused left no trace.
	var after, mine corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: other}, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("node %s changed: labels %v, annotations %v, taints %v, unschedulable %v", other, after.Labels, after.Annotations, after.Spec.Taints, after.Spec.Unschedulable)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &mine); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(mine.Labels, mineBefore.Labels) || !equality.Semantic.DeepEqual(mine.Spec.Taints, mineBefore.Spec.Taints) ||
		mine.Spec.ProviderID != "" || mine.Spec.PodCIDR != "" || len(mine.OwnerReferences) != 0 || len(mine.Finalizers) != 0 ||
		mine.Annotations[ndpmcv1.DesiredConfigAnnotation] != "rendered-security-1" || mine.Annotations["k8s.ovn.org/node-subnets"] != mineBefore.Annotations["k8s.ovn.org/node-subnets"] {
		t.Errorf("node %s after the refused changes: labels %v, taints %v, providerID %q, finalizers %v, annotations %v",
			own, mine.Labels, mine.Spec.Taints, mine.Spec.ProviderID, mine.Finalizers, mine.Annotations)
	}
}

// nodeHistory is the NodeHistory named name, owned by node, as ndp-daemon
// creates it.
func nodeHistory(name string, node *corev1.Node) *v1alpha1.NodeHistory {
	return &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(false)}}}}
}

// historyPatch records one update, as the daemon does at each step.
const historyPatch = `{"status":{"updates":[{"from":"rendered-security-1","to":"rendered-security-2","executor":"ndp-daemon",` +
	`"started":"2026-11-26T10:00:00Z","result":"InProgress"}]}}`

// The annotations the admission policy lets ndp-daemon write on its Node,
// and those it lets it only remove, are the daemon's own lists (which
// daemon.Status.annotate enforces): an annotation added to the daemon and
// not to the policy would be refused on every cluster and nowhere in the
// daemon's own tests.
func TestDaemonAdmissionAllowsItsAnnotations(t *testing.T) {
	b, err := os.ReadFile(daemonAdmission)
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`'([^']*)'`)
	got := map[string][]string{}
	for _, o := range splitObjects(t, string(b)) {
		if o.Kind != "ValidatingAdmissionPolicy" || o.Metadata.Name != nodeFieldPolicy {
			continue
		}
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		o.decode(t, &p)
		for _, v := range p.Spec.Variables {
			for _, m := range quoted.FindAllStringSubmatch(v.Expression, -1) {
				got[v.Name] = append(got[v.Name], m[1])
			}
		}
	}
	for name, want := range map[string][]string{"own": daemon.NodeAnnotations, "used": daemon.UsedAnnotations} {
		if diff := cmp.Diff(sorted(want), sorted(got[name])); diff != "" {
			t.Errorf("policy %s's variable %s against the daemon's list (-daemon +policy):\n%s", nodeFieldPolicy, name, diff)
		}
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
