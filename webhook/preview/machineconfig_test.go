package preview

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
