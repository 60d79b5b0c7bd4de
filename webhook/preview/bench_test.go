package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
)

// review200 is an AdmissionReview of a dry-run create of a MachineConfig
// with 200 files, as the API server sends it (the size the admission
// benchmark in test/cluster sends).
func review200(b *testing.B) []byte {
	ign := builder.Ignition()
	for i := range 200 {
		body := strings.Repeat(fmt.Sprintf("key%d = value-changed-%d\n", i, i), 8)
		ign.WithFiles(builder.File(fmt.Sprintf("/etc/adm/file-%03d.conf", i), body).With("mode", 420))
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "50-adm", "uid": "6c0e8f5e-1111-2222-3333-444455556666", "creationTimestamp": "2026-11-22T03:00:00Z",
			"labels": map[string]any{ndpmcv1.RoleLabel: "worker"}},
		"spec": map[string]any{"config": ign.Build()},
	})
	if err != nil {
		b.Fatal(err)
	}
	dry := true
	body, err := json.Marshal(admissionv1.AdmissionReview{
		Request: &admissionv1.AdmissionRequest{UID: "u", Name: "50-adm", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}, DryRun: &dry}})
	if err != nil {
		b.Fatal(err)
	}
	body = bytes.Replace(body, []byte(`{"request"`), []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request"`), 1)
	return body
}

// BenchmarkServeReview splits the cost of answering a 200-file review:
// controller-runtime's decoding of the review alone (a handler that allows
// everything), and the MachineConfig preview answering from its cache.
func BenchmarkServeReview(b *testing.B) {
	body := review200(b)
	preview := NewMachineConfigPreview(NewPreviewer(nil, policyset.NewActivePolicies(engine.Options{})), nil, nil)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Name: "50-adm", Operation: admissionv1.Create}}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &ar); err != nil {
		b.Fatal(err)
	}
	req.Object = ar.Request.Object
	digest, err := requestDigest(req)
	if err != nil {
		b.Fatal(err)
	}
	preview.answers.put(preview.state(digest), answer{allowed: true, warnings: []string{"pool worker, 3 nodes: ..."}})

	for name, h := range map[string]admission.Handler{
		"decode-only":    admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }),
		"preview-cached": preview,
	} {
		b.Run(name, func(b *testing.B) {
			wh := &admission.Webhook{Handler: h}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/preview-machineconfig", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				wh.ServeHTTP(w, r)
				if name == "preview-cached" && !strings.Contains(w.Body.String(), "pool worker") {
					b.Fatalf("not answered from the cache: %s", w.Body.String())
				}
			}
		})
	}
}
