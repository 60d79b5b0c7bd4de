package preview_test

// The frames' handling of failures and deadlines, with the executor's
// answers (an external test: package executor stands on this one).

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
	"github.com/ndp-dev/ndp/webhook/executor"
	"github.com/ndp-dev/ndp/webhook/internal/webhooktest"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// An answer that depends on a passing failure (here, an unreadable cache)
// allows the request with a warning, and is not kept for the next one.
func TestPassingFailuresAreNotKept(t *testing.T) {
	p := preview.NewPreviewer(webhooktest.Unreachable{}, policyset.NewActivePolicies(engine.Options{}))
	h := preview.NewMachineConfigPreview(p, &executor.Answers{Previewer: p}, admission.NewDecoder(scheme.New()))
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "50-chrony",
		Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"50-chrony","labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`)}}}
	for range 2 {
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "no preview: listing MachineConfigPools: connection refused") {
			t.Fatalf("answer: %+v", resp)
		}
	}
	if n := h.KeptAnswers(); n != 0 {
		t.Errorf("%d answers kept", n)
	}

	// An invalid config is a final answer: kept.
	req.Object.Raw = []byte(strings.Replace(string(req.Object.Raw), "3.4.0", "2.2.0", 1))
	if resp := h.Handle(context.Background(), req); resp.Allowed || !strings.Contains(resp.Result.Message, `MachineConfig "50-chrony": spec.config.ignition.version`) {
		t.Errorf("an invalid config: %+v", resp.Result)
	}
	if n := h.KeptAnswers(); n != 1 {
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
	}{{0, preview.DefaultPreviewDeadline}, {time.Minute, time.Minute}} {
		r := &deadlineReader{}
		p := preview.NewPreviewer(r, policyset.NewActivePolicies(engine.Options{}))
		mc := preview.NewMachineConfigPreview(p, &executor.Answers{Previewer: p}, admission.NewDecoder(scheme.New()))
		mc.Deadline = tc.deadline
		mc.Handle(context.Background(), req)
		if r.left > tc.want || r.left < tc.want-time.Second {
			t.Errorf("MachineConfigPreview with Deadline %s: %s left, want %s", tc.deadline, r.left, tc.want)
		}
		r.left = 0
		im := &preview.ImageMirrorPreview{Client: r, Deadline: tc.deadline}
		im.Handle(context.Background(), req)
		if r.left > tc.want || r.left < tc.want-time.Second {
			t.Errorf("ImageMirrorPreview with Deadline %s: %s left, want %s", tc.deadline, r.left, tc.want)
		}
	}
}
