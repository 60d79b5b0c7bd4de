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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
