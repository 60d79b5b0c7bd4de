package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner"
)

// The security review (docs/reliability.md, "Security review"): what each
// component's service account may and may not do, each boundary proven on
// the real API server with the shipped RBAC and admission policies. A row
// fails if the boundary were looser (a refused request succeeds, or is
// refused by something else than the row says) or tighter (an allowed one
// is refused).

// The daemon's admission policies (manifests/admission/daemon-own-node.yaml).
const (
	ownNodePolicy   = "ndp-daemon-own-node"
	nodeFieldPolicy = "ndp-daemon-node-fields"
	ownPodsPolicy   = "ndp-daemon-own-pods"
	ownEventsPolicy = "ndp-daemon-own-events"
)

// verdict is what the API server must answer one request.
type verdict struct {
	allowed bool
	// policy is the ValidatingAdmissionPolicy that refuses the request;
	// empty when RBAC refuses it.
	policy string
	// says is part of the refusal: the policy's message, or for RBAC what
	// the account "cannot" do (`delete resource "nodes"`).
	says string
}

var allowed = verdict{allowed: true}

// byRBAC: the request is refused by authorization, before admission.
func byRBAC(cannot string) verdict { return verdict{says: cannot} }

// byPolicy: RBAC allows the request and the named policy refuses it.
func byPolicy(name, says string) verdict { return verdict{policy: name, says: says} }

func (v verdict) String() string {
	switch {
	case v.allowed:
		return "allowed"
	case v.policy == "":
		return "refused by RBAC (cannot " + v.says + ")"
	default:
		return fmt.Sprintf("refused by ValidatingAdmissionPolicy %s (%q)", v.policy, v.says)
	}
}

// check fails the test unless err is what v says.
func (v verdict) check(t *testing.T, err error) {
	t.Helper()
	switch {
	case v.allowed:
		if err != nil {
			t.Errorf("got %v; want it %s", err, v)
		}
	case v.policy == "":
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot "+v.says) {
			t.Errorf("got %v; want it %s", err, v)
		}
	default:
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+v.policy+"'") || !strings.Contains(err.Error(), v.says) {
			t.Errorf("got %v; want it %s", err, v)
		}
	}
}

// boundary is one row: a request made with some account's credentials and
// the answer it must get.
type boundary struct {
	what string
	do   func(ctx context.Context) error
	want verdict
}

func runBoundaries(t *testing.T, rows []boundary) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r.want.check(t, r.do(ctx))
		})
	}
}

func rawPatch(c client.Client, obj client.Object, pt types.PatchType, patch string, opts ...client.PatchOption) error {
	return c.Patch(context.Background(), obj, client.RawPatch(pt, []byte(patch)), opts...)
}

func nodeNamed(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// anEvent is an events.k8s.io event about the object, as the daemon's
// recorder writes them (about a cluster-scoped object: in "default").
func anEvent(kind, apiVersion, namespace, name string) *eventsv1.Event {
	ns := namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "ndp-security-"},
		EventTime:  metav1.NowMicro(), ReportingController: "ndp-daemon", ReportingInstance: "ndp-daemon-security-test",
		Action: "Probe", Reason: "Probe", Type: corev1.EventTypeNormal, Note: "security test",
		Regarding: corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: namespace, Name: name},
	}
}

func evict(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})
}

func tokenFor(ctx context.Context, c client.Client, namespace, name string, bound *corev1.Pod) error {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if bound != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: bound.Name, UID: bound.UID}
	}
	return c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, req)
}

// impersonating is a client with token that asks to act as the cluster
// administrator.
func impersonating(t *testing.T, cfg *rest.Config, token string) kubernetes.Interface {
	t.Helper()
	ic := rest.AnonymousClientConfig(cfg)
	ic.BearerToken = token
	ic.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
	cs, err := kubernetes.NewForConfig(ic) // no discovery (which the impersonation would fail) before the request
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

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
	untilRefused(t, "the daemon patching another Node", "may only change its own Node and MachineConfigNode, not nodes "+other, func(i int) error {
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

// grantPodDelete binds the daemon's account to a role that deletes pods
// (the shipped role does not) and waits until the pod policy refuses,
// through it, a (dry-run) deletion of victim, a pod on another node.
func grantPodDelete(t *testing.T, d client.Client, own string, victim *corev1.Pod) {
	t.Helper()
	deleter := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ndp-daemon-security-delete-pods"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}}}}
	create(t, deleter)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: deleter.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: deleter.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-daemon"}}})
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
	mcn := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("machineconfiguration.openshift.io/v1")
		u.SetKind("MachineConfigNode")
		u.SetName(name)
		return u
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mcn(own)) })
	merge, strategic := types.MergePatchType, types.StrategicMergePatchType
	cantChange := "may only change its own Node and MachineConfigNode, not "

	runBoundaries(t, []boundary{
		// Its own Node: what the daemon does.
		{"reads its Node", func(ctx context.Context) error { return d.Get(ctx, client.ObjectKey{Name: own}, &corev1.Node{}) }, allowed},
		{"sets its state, reason and currentConfig annotations", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/state":"Working","machineconfiguration.openshift.io/reason":"x","machineconfiguration.openshift.io/currentConfig":"rendered-security-1"}}}`)
		}, allowed},
		{"removes its reason annotation", func(context.Context) error {
			return rawPatch(d, nodeNamed(own), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/reason":null}}}`)
		}, allowed},
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
		{"deletes its MachineConfigNode", func(ctx context.Context) error { return d.Delete(ctx, mcn(own)) }, byRBAC(`delete resource "machineconfignodes"`)},

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
		{"evicts a pod on its node", func(ctx context.Context) error { return evict(ctx, d, webA) }, allowed},
		{"evicts a pod on another node (residual: an Eviction names no node)", func(ctx context.Context) error { return evict(ctx, d, webB) }, allowed},
		{"deletes a pod on its node", func(ctx context.Context) error { return d.Delete(ctx, victimA) }, byRBAC(`delete resource "pods"`)},
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
		{"creates a NodeDisruptionPolicy", func(ctx context.Context) error { return d.Create(ctx, policy("security-evil", chronySpec())) }, byRBAC(`create resource "nodedisruptionpolicies"`)},

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
	})

	// Had the role granted it a delete of pods (the drain's fallback where
	// the API has no evictions), the policy confines that to its node.
	grantPodDelete(t, d, own, victimB)
	runBoundaries(t, []boundary{
		{"with delete granted: deletes a pod on another node", func(ctx context.Context) error { return d.Delete(ctx, victimB) },
			byPolicy(ownPodsPolicy, "ndp-daemon on node "+own+" may only delete pods on that node, not pod ndp-security/"+victimB.Name+" on node "+other)},
		{"with delete granted, unbound token: deletes a pod", func(ctx context.Context) error { return unbound.Delete(ctx, victimA) },
			byPolicy(ownPodsPolicy, "ndp-daemon on node (none")},
		{"with delete granted: deletes a pod on its node", func(ctx context.Context) error { return d.Delete(ctx, victimA) }, allowed},
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

// noUnits is a systemd for plans that run no unit action: every call
// succeeds.
type noUnits struct{}

func (noUnits) DaemonReload(context.Context) error    { return nil }
func (noUnits) Reload(context.Context, string) error  { return nil }
func (noUnits) Restart(context.Context, string) error { return nil }
func (noUnits) Marker(context.Context, string) (daemon.UnitMarker, error) {
	return daemon.UnitMarker{}, nil
}
func (noUnits) WaitActive(context.Context, string) error              { return nil }
func (noUnits) WaitIdle(context.Context, string) error                { return nil }
func (noUnits) UnitFileState(context.Context, string) (string, error) { return "", nil }
func (noUnits) Enable(context.Context, []string) error                { return nil }
func (noUnits) Disable(context.Context, []string) error               { return nil }
func (noUnits) StartUnitIrreversibly(context.Context, string) error   { return nil }

// finishEvicted deletes at once the pods on node that an eviction left
// Terminating, as the node's kubelet would (envtest has none).
func finishEvicted(t *testing.T, node string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go controlplane.Kubelet(ctx, k8s, node)
}

// The daemon's own code, with nothing but its pod-bound token, the shipped
// role and the admission policies in force, updates its node through a
// plan with a drain: it adopts its config, cordons, evicts the node's pods
// (its own DaemonSet pod stays), writes the file, uncordons and reports
// (annotations, MachineConfigNode, events). The boundaries above take
// nothing it needs.
func TestSecurityDaemonUpdatesItsNodeConfined(t *testing.T) {
	const own, other = "sec-run-a", "sec-run-b"
	ctx := context.Background()
	ensureNamespace(t, "ndp-security")
	pod, d := confinedDaemon(t, own, other)
	web := workloadPod(t, "ndp-security", "web-run", own)
	finishEvicted(t, own)

	// The old and the new config; the plan drains.
	const path = "/etc/ndp-security.conf"
	cfg := func(name, contents string) *ndpmcv1.MachineConfig {
		return renderedMC(name, "security-"+own).WithFiles(builder.File(path, contents).With("mode", 420).With("overwrite", true)).Build()
	}
	from, to := cfg("rendered-security-run-a", "a"), cfg("rendered-security-run-b", "b")
	np := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "security"}, Spec: v1alpha1.NodeDisruptionPolicySpec{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: path, Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.DrainSpecAction}}}}}}
	pl, err := planner.New(ctx, []planner.Policy{planner.DefaultPolicy(), planner.PolicyFromAPI("security", np, 0, 0)}, planner.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fromCfg, err := planner.NewConfig(from.Name, from.Spec)
	if err != nil {
		t.Fatal(err)
	}
	toCfg, err := planner.NewConfig(to.Name, to.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pl.Plan(ctx, planner.Request{From: fromCfg, To: toCfg})
	if err != nil {
		t.Fatal(err)
	}
	plan := p.PostConfigActions()
	if !plan.Drain || plan.Reboot {
		t.Fatalf("the plan does not drain without a reboot: %+v", plan)
	}
	create(t, from)
	create(t, to)
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{plan}
	if err := k8s.Status().Update(ctx, to); err != nil {
		t.Fatal(err)
	}
	if err := rawPatch(k8s, nodeNamed(own), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		ndpmcv1.CurrentConfigAnnotation, from.Name, ndpmcv1.DesiredConfigAnnotation, from.Name)); err != nil {
		t.Fatal(err)
	}

	// The daemon, as cmd/ndp-daemon wires it, with the token for every call.
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for p, data := range map[string]string{"/etc/passwd": "root:x:0:0:root:/root:/bin/bash\n", "/etc/group": "root:x:0:\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bootID := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(bootID, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, err := daemon.OpenHost(root, "/etc/systemd/system")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	cfgToken := rest.AnonymousClientConfig(restConfig)
	cfgToken.BearerToken = daemonToken(t, pod)
	cs, err := kubernetes.NewForConfig(cfgToken)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	ectx, stopEvents := context.WithCancel(ctx)
	if err := broadcaster.StartRecordingToSinkWithContext(ectx); err != nil {
		t.Fatal(err)
	}
	defer func() { stopEvents(); broadcaster.Shutdown() }()
	var drainLog output.Buffer
	dm := &daemon.Daemon{
		NodeName: own, Client: d, Reader: d, Host: host,
		Systemd: noUnits{}, OS: daemon.RecordingOSUpdater{Path: filepath.Join(dir, "os")},
		Rebooter: daemon.RecordingRebooter{Path: filepath.Join(dir, "reboots")},
		Drainer: &daemon.Drainer{Client: cs, AttemptTimeout: 30 * time.Second, EvictRetryDelay: 200 * time.Millisecond,
			RetryMin: 200 * time.Millisecond, RetryMax: 2 * time.Second, Log: &drainLog},
		Status:     &daemon.Status{Client: d, Reader: d, Recorder: broadcaster.NewRecorder(scheme.New(), "ndp-daemon"), NodeName: own},
		BootIDPath: bootID, PollInterval: 500 * time.Millisecond, Log: logr.Discard(),
	}
	syncUntil := func(what string, ok func(*corev1.Node) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			_, err := dm.Sync(sctx)
			cancel()
			var n corev1.Node
			if gerr := k8s.Get(ctx, client.ObjectKey{Name: own}, &n); gerr != nil {
				t.Fatal(gerr)
			}
			if err == nil && ok(&n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last sync: %v; node annotations %v, unschedulable %v; drain log:\n%s", what, err, n.Annotations, n.Spec.Unschedulable, drainLog.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	done := func(config string) func(*corev1.Node) bool {
		return func(n *corev1.Node) bool {
			return n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone && n.Annotations[ndpmcv1.CurrentConfigAnnotation] == config
		}
	}
	syncUntil("adopting "+from.Name, done(from.Name))
	if err := rawPatch(k8s, nodeNamed(own), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ndpmcv1.DesiredConfigAnnotation, to.Name)); err != nil {
		t.Fatal(err)
	}
	syncUntil("updating to "+to.Name, done(to.Name))

	var n corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || n.Annotations[ndpmcv1.ReasonAnnotation] != "" {
		t.Errorf("after the update: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	if b, err := os.ReadFile(filepath.Join(root, path)); err != nil || string(b) != "b" {
		t.Errorf("%s on the host: %q, %v", path, b, err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(web), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the workload pod after the drain: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
		t.Errorf("the daemon's own (DaemonSet) pod after the drain: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfigNode")
	t.Cleanup(func() {
		u.SetName(own)
		_ = k8s.Delete(context.Background(), u)
	})
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, u); err != nil {
		t.Errorf("MachineConfigNode %s: %v", own, err)
	} else if cur, _, _ := unstructured.NestedString(u.Object, "status", "configVersion", "current"); cur != to.Name {
		t.Errorf("MachineConfigNode %s: status.configVersion.current %q, want %s", own, cur, to.Name)
	}
	// Its events about its Node got through the events policy.
	want := map[string]bool{"Cordoned": false, "Drained": false, "UpdateComplete": false}
	deadline := time.Now().Add(policyPatience)
	for {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if _, ok := want[e.Reason]; ok && e.Regarding.Name == own && e.ReportingController == "ndp-daemon" {
				want[e.Reason] = true
			}
		}
		if want["Cordoned"] && want["Drained"] && want["UpdateComplete"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's events about %s (seen: %v)", own, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownerRefPlane is a second control plane whose API server, as
// OpenShift's does, runs the OwnerReferencesPermissionEnforcement
// admission plugin: an owner reference with blockOwnerDeletion needs update
// on the owner's finalizers, and changing an object's owner references
// needs delete on the object. (The suite's API server runs the default
// plugins only.)
type ownerRefPlane struct {
	cfg        *rest.Config
	admin      client.Client
	kubeconfig string
}

func startOwnerRefPlane(t *testing.T) *ownerRefPlane {
	t.Helper()
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", Kubeconfig: true, Configure: func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	}})
	return &ownerRefPlane{cfg: cp.Config, admin: cp.Client, kubeconfig: cp.Kubeconfig}
}

func (p *ownerRefPlane) kubectl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(kubectlBin, append([]string{"--kubeconfig", p.kubeconfig}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *ownerRefPlane) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := p.admin.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

// token is a token of the service account, as its pod's projected volume
// holds.
func (p *ownerRefPlane) token(t *testing.T, namespace, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", namespace, name, err)
	}
	return got.Status.Token
}

// What ndp-controller's service account, with the generated roles
// (manifests/rbac/role.yaml) and the shipped bindings, may and may not do;
// first, unless -short, that the real ndp-controller needs nothing more:
// run with nothing but that account's token on an API server that enforces
// owner-reference permissions as OpenShift's does, it renders, plans and
// rolls out a pool, adopts an existing registries MachineConfig, reports
// its status, elects itself and keeps its webhook certificate, and the API
// server refuses it nothing.
func TestSecurityBoundariesOfTheController(t *testing.T) {
	ctx := context.Background()
	p := startOwnerRefPlane(t)
	// The namespace, account and bindings first, then the roles; the
	// daemon's manifests too (the controller must not lift its policies).
	p.kubectl(t, "apply", "-f", "../../manifests/deploy/ndp-controller.yaml")
	p.kubectl(t, "apply", "-f", "../../manifests/rbac/role.yaml")
	p.kubectl(t, "apply", "-f", daemonRole, "-f", daemonDeploy, "-f", daemonAdmission)
	token := p.token(t, "ndp-system", "ndp-controller")
	cfg := rest.AnonymousClientConfig(p.cfg)
	cfg.BearerToken = token
	ctl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// The API server loads the bindings asynchronously.
	testkit.Eventually(t, "ndp-controller's ClusterRoleBinding and RoleBinding in force", func() (bool, string) {
		err1 := ctl.List(ctx, &corev1.NodeList{})
		err2 := ctl.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "absent"}, &corev1.Secret{})
		return err1 == nil && apierrors.IsNotFound(err2), fmt.Sprintf("%v; %v", err1, err2)
	}, testkit.Within(policyPatience))

	if testing.Short() {
		t.Log("-short: not running ndp-controller as its service account")
	} else {
		runControllerAsItsAccount(t, p, cfg)
	}

	// The objects the rows aim at, as an administrator makes them.
	p.create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ndp-security"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sec-token"}, StringData: map[string]string{"token": "x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-other"}, StringData: map[string]string{"token": "x"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sec-other"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-other-webhook"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"}},
	)
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-security", Name: "web"},
		Spec: corev1.PodSpec{NodeName: "sec-other", Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	p.create(t, web)
	merge := types.MergePatchType
	pool := &unstructured.Unstructured{}
	pool.SetAPIVersion("machineconfiguration.openshift.io/v1")
	pool.SetKind("MachineConfigPool")
	pool.SetName("master")

	runBoundaries(t, []boundary{
		// What the rollout, the policy bundles, the certificate and the
		// leader election need, and what they let through.
		{"sets a Node's desiredConfig (the rollout)", func(context.Context) error {
			return rawPatch(ctl, nodeNamed("sec-other"), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-2"}}}`)
		}, allowed},
		{"changes any other field of a Node (residual: RBAC grants patch, not a field)", func(context.Context) error {
			return rawPatch(ctl, nodeNamed("sec-other"), merge, `{"metadata":{"labels":{"node-role.kubernetes.io/master":""}}}`)
		}, allowed},
		{"lists ConfigMaps in every namespace (a policy's bundle may be in any)", func(ctx context.Context) error {
			return ctl.List(ctx, &corev1.ConfigMapList{})
		}, allowed},
		{"reads another Secret in ndp-system (residual: get cannot name one Secret and stay testable)", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "sec-other"}, &corev1.Secret{})
		}, allowed},
		{"updates another ValidatingWebhookConfiguration (residual: by name only in the marker)", func(ctx context.Context) error {
			var w admissionregistrationv1.ValidatingWebhookConfiguration
			if err := ctl.Get(ctx, client.ObjectKey{Name: "sec-other-webhook"}, &w); err != nil {
				return err
			}
			w.Labels = map[string]string{"ndp.dev/touched": "true"}
			return ctl.Update(ctx, &w)
		}, allowed},
		{"creates a Lease in ndp-system (leader election)", func(ctx context.Context) error {
			return ctl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-probe"}})
		}, allowed},

		// Secrets.
		{"reads a Secret in kube-system", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "sec-token"}, &corev1.Secret{})
		}, byRBAC(`get resource "secrets"`)},
		{"lists Secrets in every namespace", func(ctx context.Context) error { return ctl.List(ctx, &corev1.SecretList{}) }, byRBAC(`list resource "secrets"`)},
		{"lists Secrets in ndp-system", func(ctx context.Context) error {
			return ctl.List(ctx, &corev1.SecretList{}, client.InNamespace("ndp-system"))
		}, byRBAC(`list resource "secrets"`)},
		{"deletes a Secret in ndp-system", func(ctx context.Context) error {
			return ctl.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-other"}})
		}, byRBAC(`delete resource "secrets"`)},
		{"creates a Secret in kube-system", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sec-new"}})
		}, byRBAC(`create resource "secrets"`)},

		// Nodes beyond the rollout's patch, and pods.
		{"creates a Node", func(ctx context.Context) error { return ctl.Create(ctx, nodeNamed("sec-new")) }, byRBAC(`create resource "nodes"`)},
		{"replaces a Node (update)", func(ctx context.Context) error {
			var n corev1.Node
			if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-other"}, &n); err != nil {
				return err
			}
			return ctl.Update(ctx, &n)
		}, byRBAC(`update resource "nodes"`)},
		{"deletes a Node", func(ctx context.Context) error { return ctl.Delete(ctx, nodeNamed("sec-other")) }, byRBAC(`delete resource "nodes"`)},
		{"writes a Node's status", func(ctx context.Context) error {
			return ctl.Status().Patch(ctx, nodeNamed("sec-other"), client.RawPatch(merge, []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)))
		}, byRBAC(`patch resource "nodes/status"`)},
		{"lists pods", func(ctx context.Context) error { return ctl.List(ctx, &corev1.PodList{}) }, byRBAC(`list resource "pods"`)},
		{"evicts a pod", func(ctx context.Context) error { return evict(ctx, ctl, web) }, byRBAC(`create resource "pods/eviction"`)},
		{"deletes a pod", func(ctx context.Context) error { return ctl.Delete(ctx, web) }, byRBAC(`delete resource "pods"`)},
		{"creates a pod", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-security", Name: "sec-new"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
		}, byRBAC(`create resource "pods"`)},
		{"changes the ndp-daemon DaemonSet", func(context.Context) error {
			return rawPatch(ctl, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "ndp-daemon"}}, merge, `{"spec":{"template":{"spec":{"containers":[{"name":"ndp-daemon","image":"evil"}]}}}}`)
		}, byRBAC(`patch resource "daemonsets"`)},

		// Leases beyond its own election.
		{"writes a node's heartbeat Lease in kube-node-lease", func(ctx context.Context) error {
			return ctl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "sec-other"}})
		}, byRBAC(`create resource "leases"`)},
		{"reads the scheduler's leader Lease in kube-system", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-scheduler"}, &coordinationv1.Lease{})
		}, byRBAC(`get resource "leases"`)},
		{"lists Leases in ndp-system", func(ctx context.Context) error {
			return ctl.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("ndp-system"))
		}, byRBAC(`list resource "leases"`)},
		{"deletes a Lease in ndp-system", func(ctx context.Context) error {
			return ctl.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-probe"}})
		}, byRBAC(`delete resource "leases"`)},

		// Escalation.
		{"binds itself to cluster-admin", func(ctx context.Context) error {
			return ctl.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-controller"}}})
		}, byRBAC(`create resource "clusterrolebindings"`)},
		{"creates a RoleBinding in ndp-system", func(ctx context.Context) error {
			return ctl.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-controller"}}})
		}, byRBAC(`create resource "rolebindings"`)},
		{"widens its own ClusterRole", func(context.Context) error {
			return rawPatch(ctl, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ndp-controller"}}, merge, `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`)
		}, byRBAC(`patch resource "clusterroles"`)},
		{"impersonates the administrator", func(ctx context.Context) error {
			_, err := impersonating(t, p.cfg, token).CoreV1().Secrets("kube-system").Get(ctx, "sec-token", metav1.GetOptions{})
			return err
		}, byRBAC("impersonate")},
		{"mints a token of ndp-daemon", func(ctx context.Context) error { return tokenFor(ctx, ctl, "ndp-system", "ndp-daemon", nil) },
			byRBAC(`create resource "serviceaccounts/token"`)},
		{"lifts the daemon's admission policy", func(context.Context) error {
			return rawPatch(ctl, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownNodePolicy}}, merge, `{"spec":{"validations":[{"expression":"true"}]}}`)
		}, byRBAC(`patch resource "validatingadmissionpolicies"`)},
		{"unbinds the daemon's admission policy", func(ctx context.Context) error {
			return ctl.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ownNodePolicy}})
		}, byRBAC(`delete resource "validatingadmissionpolicybindings"`)},
		{"lists ValidatingWebhookConfigurations", func(ctx context.Context) error {
			return ctl.List(ctx, &admissionregistrationv1.ValidatingWebhookConfigurationList{})
		}, byRBAC(`list resource "validatingwebhookconfigurations"`)},
		{"deletes a ValidatingWebhookConfiguration", func(ctx context.Context) error {
			return ctl.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-other-webhook"}})
		}, byRBAC(`delete resource "validatingwebhookconfigurations"`)},
		{"creates a MutatingWebhookConfiguration", func(ctx context.Context) error {
			return ctl.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-evil"}})
		}, byRBAC(`create resource "mutatingwebhookconfigurations"`)},
		{"changes a CustomResourceDefinition", func(context.Context) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			u.SetName("machineconfigs.machineconfiguration.openshift.io")
			return rawPatch(ctl, u, merge, `{"metadata":{"labels":{"x":"y"}}}`)
		}, byRBAC(`patch resource "customresourcedefinitions"`)},

		// ndp's and openshift's objects beyond what the controllers write.
		{"deletes a MachineConfigPool", func(ctx context.Context) error { return ctl.Delete(ctx, pool) }, byRBAC(`delete resource "machineconfigpools"`)},
		{"replaces a MachineConfigPool (update)", func(ctx context.Context) error {
			u := pool.DeepCopy()
			u.SetResourceVersion("1")
			return ctl.Update(ctx, u)
		}, byRBAC(`update resource "machineconfigpools"`)},
		{"deletes a NodeDisruptionPolicy", func(ctx context.Context) error {
			return ctl.Delete(ctx, &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ndp-default"}})
		}, byRBAC(`delete resource "nodedisruptionpolicies"`)},
		{"creates a ConfigMap", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-evil"}})
		}, byRBAC(`create resource "configmaps"`)},
		{"writes a MachineConfigNode", func(context.Context) error { return applyMCN(ctl, "sec-other", false) }, byRBAC(`patch resource "machineconfignodes"`)},
	})
}

// runControllerAsItsAccount builds ndp-controller and runs it with nothing
// but its service account's token (cfg) against p, and checks it does its
// whole job; the API server must refuse it nothing.
func runControllerAsItsAccount(t *testing.T, p *ownerRefPlane, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ndp-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["ndp"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["ndp-controller"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["ndp"] = &clientcmdapi.Context{Cluster: "ndp", AuthInfo: "ndp-controller"}
	kc.CurrentContext = "ndp"
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}
	port, probes := testkit.FreePort(t), testkit.FreePort(t)

	// Its webhook configuration (for the CA bundle; it admits nothing
	// here), a pool with a source config, a registries config someone
	// else made (adopted), and a Ready node of the pool.
	p.create(t, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ndp-webhook"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "security.validate.ndp.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d/validate-nodedisruptionpolicy", port))},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"ndp.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"nodedisruptionpolicies"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"ndp.dev/security-e2e": "true"}},
		}}})
	p.create(t,
		&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "sec"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/sec": ""}},
		}},
		sourceMC("00-sec-base", "sec").WithFile("/etc/kubernetes/kubelet.conf", "base").Build(),
		sourceMC("99-sec-generated-registries", "sec").Build(),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sec-0", Labels: map[string]string{"node-role.kubernetes.io/sec": ""}}},
	)
	var n corev1.Node
	if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-0"}, &n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := p.admin.Status().Update(ctx, &n); err != nil {
		t.Fatal(err)
	}

	var logs output.Buffer
	cmd := exec.Command(bin, "--kubeconfig", kcPath,
		"--leader-election-namespace=ndp-system", "--metrics-bind-address=0",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probes),
		"--webhook-port", fmt.Sprint(port),
		"--webhook-cert-dir", filepath.Join(dir, "mounted"), // nothing mounted: self-signed
		"--webhook-self-signed-dir", filepath.Join(dir, "self-signed"),
		"--namespace", "ndp-system", "--webhook-configuration", "ndp-webhook", "--webhook-cert-extra-names", "localhost")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		if cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			cmd.Process = nil
		}
	}
	t.Cleanup(stop)
	defer func() {
		if t.Failed() {
			t.Logf("ndp-controller output:\n%s", logs.String())
		}
	}()
	const slow = 3 * time.Minute // a fresh process on a loaded machine: elect, compile the policies, render
	owned := func(mc *ndpmcv1.MachineConfig, pool *mcfgv1.MachineConfigPool) bool {
		ref := metav1.GetControllerOf(mc)
		return ref != nil && ref.UID == pool.UID && ptr.Deref(ref.BlockOwnerDeletion, false)
	}
	var pool mcfgv1.MachineConfigPool
	getPool := func() *mcfgv1.MachineConfigPool {
		if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec"}, &pool); err != nil {
			t.Fatal(err)
		}
		return &pool
	}

	// Adopting the registries config: an update adding an owner reference,
	// so delete on it and update on the pool's finalizers.
	testkit.Eventually(t, "99-sec-generated-registries adopted by pool sec", func() (bool, string) {
		var mc ndpmcv1.MachineConfig
		err := p.admin.Get(ctx, client.ObjectKey{Name: "99-sec-generated-registries"}, &mc)
		return err == nil && owned(&mc, getPool()), fmt.Sprintf("%v, owners %v", err, mc.OwnerReferences)
	}, testkit.Within(slow))
	// Rendering: a config created with the pool as its controller, and the
	// pool's target patched.
	var first string
	testkit.Eventually(t, "pool sec rendered from its two sources", func() (bool, string) {
		pl := getPool()
		if len(pl.Spec.Configuration.Source) != 2 {
			return false, fmt.Sprintf("configuration %+v", pl.Spec.Configuration)
		}
		var mc ndpmcv1.MachineConfig
		err := p.admin.Get(ctx, client.ObjectKey{Name: pl.Spec.Configuration.Name}, &mc)
		first = mc.Name
		return err == nil && owned(&mc, pl), fmt.Sprintf("%v, owners %v", err, mc.OwnerReferences)
	}, testkit.Within(slow))
	// The node runs it; a new config is planned and the node sent to it.
	if err := rawPatch(p.admin, nodeNamed("sec-0"), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q,%q:%q}}}`,
		ndpmcv1.CurrentConfigAnnotation, first, ndpmcv1.DesiredConfigAnnotation, first, ndpmcv1.StateAnnotation, ndpmcv1.StateDone)); err != nil {
		t.Fatal(err)
	}
	p.create(t, sourceMC("50-sec-chrony", "sec").WithFile("/etc/chrony.conf", "pool x").Build())
	var second string
	testkit.Eventually(t, "pool sec re-rendered, planned and rolled out", func() (bool, string) {
		second = getPool().Spec.Configuration.Name
		var mc ndpmcv1.MachineConfig
		if second == first || p.admin.Get(ctx, client.ObjectKey{Name: second}, &mc) != nil || mc.Status.PlanFrom(first) == nil {
			return false, fmt.Sprintf("target %s, plans %+v", second, mc.Status.PostConfigActions)
		}
		var node corev1.Node
		err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-0"}, &node)
		return err == nil && node.Annotations[ndpmcv1.DesiredConfigAnnotation] == second, fmt.Sprintf("node sec-0 %v: %v", err, node.Annotations)
	}, testkit.Within(slow))
	testkit.Eventually(t, "pool sec's status written", func() (bool, string) {
		pl := getPool()
		return pl.Status.MachineCount == 1 && len(pl.Status.Conditions) > 0, fmt.Sprintf("%+v", pl.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "ClusterOperator ndp created and reporting", func() (bool, string) {
		var co configv1.ClusterOperator
		err := p.admin.Get(ctx, client.ObjectKey{Name: "ndp"}, &co)
		return err == nil && len(co.Status.Conditions) > 0, fmt.Sprintf("%v: %+v", err, co.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the default NodeDisruptionPolicy created and accepted", func() (bool, string) {
		var np v1alpha1.NodeDisruptionPolicy
		err := p.admin.Get(ctx, client.ObjectKey{Name: controllers.DefaultPolicyName}, &np)
		c := meta.FindStatusCondition(np.Status.Conditions, v1alpha1.ConditionAccepted)
		return err == nil && c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%v: %+v", err, np.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the leader Lease in ndp-system held", func() (bool, string) {
		var l coordinationv1.Lease
		err := p.admin.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: controllers.LeaderElectionID}, &l)
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != "", fmt.Sprintf("%v: %+v", err, l.Spec)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the self-signed certificate's Secret written and its CA injected", func() (bool, string) {
		var s corev1.Secret
		var w admissionregistrationv1.ValidatingWebhookConfiguration
		err1 := p.admin.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-webhook-self-signed"}, &s)
		err2 := p.admin.Get(ctx, client.ObjectKey{Name: "ndp-webhook"}, &w)
		return err1 == nil && err2 == nil && len(s.Data["ca.crt"]) > 0 && string(w.Webhooks[0].ClientConfig.CABundle) == string(s.Data["ca.crt"]),
			fmt.Sprintf("%v; %v", err1, err2)
	}, testkit.Within(slow))
	testkit.Eventually(t, "an event about the rendering of pool sec", func() (bool, string) {
		var list eventsv1.EventList
		err := p.admin.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault))
		for _, e := range list.Items {
			if e.Regarding.Name == "sec" && e.Reason == "Rendered" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v, %d events", err, len(list.Items))
	}, testkit.Within(slow))
	stop()
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Errorf("the API server refused ndp-controller something:\n%s", logs.String())
	}
}
