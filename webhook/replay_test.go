package webhook

import (
	"strings"
	"testing"
)

func TestDigestWithoutUID(t *testing.T) {
	review := func(apiVersion, uid, object string) []byte {
		return []byte(`{"kind":"AdmissionReview","apiVersion":"` + apiVersion + `","request":{"uid":"` + uid + `","kind":{"group":"machineconfiguration.openshift.io","version":"v1","kind":"MachineConfig"},"operation":"CREATE","object":` + object + `}}`)
	}
	const obj = `{"metadata":{"name":"a"},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`
	uid1, d1, ok1 := digestWithoutUID(review("admission.k8s.io/v1", "u-1", obj))
	uid2, d2, ok2 := digestWithoutUID(review("admission.k8s.io/v1", "u-2", obj))
	if !ok1 || !ok2 || uid1 != "u-1" || uid2 != "u-2" {
		t.Fatalf("uids %q %q (%v %v)", uid1, uid2, ok1, ok2)
	}
	if d1 != d2 {
		t.Error("reviews that differ only in their uid have different digests")
	}
	if _, d3, _ := digestWithoutUID(review("admission.k8s.io/v1", "u-1", strings.Replace(obj, `"a"`, `"b"`, 1))); d3 == d1 {
		t.Error("reviews of different objects have the same digest")
	}
	for name, body := range map[string]string{
		"v1beta1":         string(review("admission.k8s.io/v1beta1", "u", obj)),
		"uid not first":   `{"apiVersion":"admission.k8s.io/v1","request":{"kind":{},"uid":"u"}}`,
		"object before":   `{"apiVersion":"admission.k8s.io/v1","x":{},"request":{"uid":"u"}}`,
		"no request":      `{"apiVersion":"admission.k8s.io/v1"}`,
		"not json":        `{"apiVersion":`,
		"uid not string":  `{"apiVersion":"admission.k8s.io/v1","request":{"uid":1}}`,
		"request not obj": `{"apiVersion":"admission.k8s.io/v1","request":"x"}`,
		"empty":           ``,
	} {
		if _, _, ok := digestWithoutUID([]byte(body)); ok {
			t.Errorf("%s: took the replay path", name)
		}
	}
}
