package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
)

// The security review (docs/reliability.md, "Security review"): what each
// component's service account may and may not do, each boundary proven on
// the real API server with the shipped RBAC and admission policies. A row
// fails if the boundary were looser (a refused request succeeds, or is
// refused by something else than the row says) or tighter (an allowed one
// is refused).

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

// The shipped manifests of the daemon.
const (
	daemonRole      = "../../manifests/rbac/daemon/role.yaml"
	daemonDeploy    = "../../manifests/deploy/ndp-daemon.yaml"
	daemonAdmission = "../../manifests/admission/daemon-own-node.yaml"
)

// policyPatience bounds the wait for the API server to load an admission
// policy (and the RBAC binding) it was just given: it does so
// asynchronously, within seconds, but a loaded machine is slow.
const policyPatience = 90 * time.Second

// ensureNamespace creates the namespace unless it exists. It is never
// deleted: without a namespace controller (there is no
// kube-controller-manager here) a deleted namespace stays Terminating and
// nothing can be created in it again.
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// applyDaemonManifests applies the daemon's shipped RBAC, DaemonSet and
// admission policies in ndp-system, as an administrator does, with the real
// kubectl, and deletes them when the test ends.
func applyDaemonManifests(t *testing.T) {
	t.Helper()
	ensureNamespace(t, "ndp-system")
	if out, err := kubectl(t, "apply", "-f", daemonRole, "-f", daemonDeploy, "-f", daemonAdmission); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-f", daemonAdmission, "-f", daemonDeploy, "-f", daemonRole); err != nil {
			t.Logf("kubectl delete: %v\n%s", err, out)
		}
	})
}

// asDaemon returns a client that authenticates with token, as a daemon's
// pod does with its projected service-account token.
func asDaemon(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// daemonToken asks the API server for a token of the ndp-daemon service
// account, bound to pod when it is not nil (as the kubelet's projected
// token is), unbound otherwise.
func daemonToken(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	got, err := cs.CoreV1().ServiceAccounts("ndp-system").CreateToken(context.Background(), "ndp-daemon", req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ndp-daemon: %v", err)
	}
	return got.Status.Token
}

// daemonAnnotation is one of the node annotations the daemon writes (the
// admission policy lets it change no other).
const daemonAnnotation = ndpmcv1.ReasonAnnotation

// annotateNode merge-patches one annotation of a node, as the daemon does.
func annotateNode(c client.Client, name, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, daemonAnnotation, value)
	return c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// applyMCN server-side applies a MachineConfigNode's spec, or its status,
// as the daemon does (daemon.Status.apply).
func applyMCN(c client.Client, name string, status bool) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfigNode",
		"metadata":   map[string]any{"name": name},
	}}
	ctx := context.Background()
	if status {
		u.Object["status"] = map[string]any{"configVersion": map[string]any{"desired": "rendered-worker-1"}, "conditions": []any{map[string]any{
			"type": "Updated", "status": "True", "reason": "Updated", "message": "the node runs rendered-worker-1",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
		return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("ndp-daemon"), client.ForceOwnership)
	}
	u.Object["spec"] = map[string]any{
		"node":          map[string]any{"name": name},
		"pool":          map[string]any{"name": "worker"},
		"configVersion": map[string]any{"desired": "rendered-worker-1"},
	}
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("ndp-daemon"), client.ForceOwnership)
}

// refused checks that err is the admission policy's refusal and that its
// message contains want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ndp-daemon-own-node") {
		t.Errorf("%s: got %v, want a refusal by ValidatingAdmissionPolicy ndp-daemon-own-node saying %q", what, err, want)
	}
}

// untilRefused repeats try until the admission policy refuses it with want.
// The API server loads a new policy and role binding asynchronously: until
// then, try may succeed, or be refused by RBAC; any other refusal fails the
// test at once.
func untilRefused(t *testing.T, what, want string, try func(attempt int) error) {
	t.Helper()
	deadline := time.Now().Add(policyPatience)
	for i := 0; ; i++ {
		err := try(i)
		if err != nil && strings.Contains(err.Error(), want) {
			t.Logf("%s: %v", what, err)
			return
		}
		if err != nil && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot ")) {
			t.Fatalf("%s: %v; want the policy's refusal %q", what, err, want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %s: %v; want the policy's refusal %q", policyPatience, what, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mcnNamed is the MachineConfigNode name, for server-side apply and delete.
func mcnNamed(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfigNode")
	u.SetName(name)
	return u
}
