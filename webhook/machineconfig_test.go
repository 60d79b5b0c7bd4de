package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
)

func TestRequestDigestIgnoresPerRequestMetadata(t *testing.T) {
	review := func(op admissionv1.Operation, object string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Name: "50-chrony", Object: runtime.RawExtension{Raw: []byte(object)}}}
	}
	const mc = `{"metadata":{"name":"50-chrony","uid":"UID","creationTimestamp":"TIME","labels":{"machineconfiguration.openshift.io/role":"worker","b":"c"}},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`
	digest := func(op admissionv1.Operation, object string) [32]byte {
		t.Helper()
		d, err := requestDigest(review(op, object))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest(admissionv1.Create, mc)
	same := strings.NewReplacer("UID", "another-uid", "TIME", "2026-11-22T03:00:00Z", `"machineconfiguration.openshift.io/role":"worker","b":"c"`, `"b":"c","machineconfiguration.openshift.io/role":"worker"`).Replace(mc)
	if digest(admissionv1.Create, same) != base {
		t.Error("a new uid, timestamp or label order changed the digest")
	}
	for name, other := range map[string]string{
		"labels": strings.Replace(mc, `"worker"`, `"infra"`, 1),
		"spec":   strings.Replace(mc, "3.4.0", "3.5.0", 1),
	} {
		if digest(admissionv1.Create, other) == base {
			t.Errorf("a different %s has the same digest", name)
		}
	}
	if digest(admissionv1.Update, mc) == base {
		t.Error("an update and a create have the same digest")
	}
	if _, err := requestDigest(review(admissionv1.Create, `{"metadata":`)); err == nil {
		t.Error("an undecodable object has a digest")
	}
	// Another layout (spec first) is decoded in full, with the same result
	// for the same labels and spec.
	specFirst := `{"spec":{"config":{"ignition":{"version":"3.4.0"}}},"metadata":{"name":"50-chrony","labels":{"b":"c","machineconfiguration.openshift.io/role":"worker"}}}`
	labels, rest, err := splitMetadata([]byte(specFirst))
	if err != nil || labels["b"] != "c" || string(rest) != `{"config":{"ignition":{"version":"3.4.0"}}}` {
		t.Errorf("spec first: %v %s %v", labels, rest, err)
	}
}

// unreachable is a cluster that cannot be read.
type unreachable struct{ client.Reader }

func (unreachable) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

// An answer that depends on a passing failure (here, an unreadable cache)
// allows the request with a warning, and is not kept for the next one.
func TestPassingFailuresAreNotKept(t *testing.T) {
	h := NewMachineConfigPreview(NewPreviewer(unreachable{}, policyset.NewActivePolicies(engine.Options{})), admission.NewDecoder(scheme.New()))
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "50-chrony",
		Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"50-chrony","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`)}}}
	for range 2 {
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "no preview: listing MachineConfigPools: connection refused") {
			t.Fatalf("answer: %+v", resp)
		}
	}
	if n := len(h.answers.entries); n != 0 {
		t.Errorf("%d answers kept", n)
	}

	// An invalid config is a final answer: kept.
	req.Object.Raw = []byte(strings.Replace(string(req.Object.Raw), "3.4.0", "2.2.0", 1))
	if resp := h.Handle(context.Background(), req); resp.Allowed || !strings.Contains(resp.Result.Message, `MachineConfig "50-chrony": spec.config.ignition.version`) {
		t.Errorf("an invalid config: %+v", resp.Result)
	}
	if n := len(h.answers.entries); n != 1 {
		t.Errorf("%d answers kept, want the denial", n)
	}
}

// deadlineReader is a cluster that cannot be read; it records the deadline
// of the last List.
type deadlineReader struct {
	client.Reader
	left time.Duration
}

func (r *deadlineReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	if d, ok := ctx.Deadline(); ok {
		r.left = time.Until(d)
	}
	return errors.New("connection refused")
}

// The preview handlers' Deadline bounds a preview: DefaultPreviewDeadline
// when zero.
func TestPreviewDeadline(t *testing.T) {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "50-chrony",
		Kind:   metav1.GroupVersionKind{Kind: "ImageDigestMirrorSet"},
		Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"50-chrony","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`)}}}
	for _, tc := range []struct {
		deadline time.Duration
		want     time.Duration
	}{{0, DefaultPreviewDeadline}, {time.Minute, time.Minute}} {
		r := &deadlineReader{}
		mc := NewMachineConfigPreview(NewPreviewer(r, policyset.NewActivePolicies(engine.Options{})), admission.NewDecoder(scheme.New()))
		mc.Deadline = tc.deadline
		mc.Handle(context.Background(), req)
		if r.left > tc.want || r.left < tc.want-time.Second {
			t.Errorf("MachineConfigPreview with Deadline %s: %s left, want %s", tc.deadline, r.left, tc.want)
		}
		r.left = 0
		im := &ImageMirrorPreview{Client: r, Deadline: tc.deadline}
		im.Handle(context.Background(), req)
		if r.left > tc.want || r.left < tc.want-time.Second {
			t.Errorf("ImageMirrorPreview with Deadline %s: %s left, want %s", tc.deadline, r.left, tc.want)
		}
	}
}
