package executor

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// The preview refuses what the controller would refuse, with its message,
// and says when a config selects no pool.
func TestGeneratedConfigPreviewRefusesAsTheController(t *testing.T) {
	s := scheme.New()
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pool).Build()
	p := preview.NewPreviewer(c, policyset.NewActivePolicies(engine.Options{}))
	h := &preview.GeneratedConfigPreview{Previewer: p, Answers: &Answers{Previewer: p}, Decoder: admission.NewDecoder(s)}
	review := func(kind, object string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "x",
			Kind: metav1.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: kind}, Object: runtime.RawExtension{Raw: []byte(object)}}}
	}
	for _, tc := range []struct{ kind, object, want string }{
		{"KubeletConfig", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"KubeletConfig","metadata":{"name":"x"},"spec":{"kubeletConfig":{"cpuManagerPolicy":"bogus"}}}`,
			`KubeletConfig "x": spec.kubeletConfig.cpuManagerPolicy: "bogus" is not one of "none", "static"`},
		{"KubeletConfig", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"KubeletConfig","metadata":{"name":"x"},"spec":{"logLevel":12}}`,
			`KubeletConfig "x": spec.logLevel: 12 is not in [1,10]`},
		{"ContainerRuntimeConfig", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"ContainerRuntimeConfig","metadata":{"name":"x"},"spec":{"containerRuntimeConfig":{"pidsLimit":5}}}`,
			`ContainerRuntimeConfig "x": spec.containerRuntimeConfig.pidsLimit: 5 is below the minimum of 20`},
	} {
		resp := h.Handle(context.Background(), review(tc.kind, tc.object))
		if resp.Allowed || resp.Result == nil || resp.Result.Message != tc.want {
			t.Errorf("%s: allowed %v, %+v; want denied with %q", tc.kind, resp.Allowed, resp.Result, tc.want)
		}
	}
	resp := h.Handle(context.Background(), review("KubeletConfig", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"KubeletConfig","metadata":{"name":"x"},"spec":{"machineConfigPoolSelector":{"matchLabels":{"nope":""}},"kubeletConfig":{"maxPods":10}}}`))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "does not match any MachineConfigPools") {
		t.Errorf("no pool selected: %+v", resp)
	}
}
