package mcorender

import (
	"bytes"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// mcoYAML writes the very bytes sigs.k8s.io/yaml.Marshal writes (what the
// MCO hashes), for the specs of real clusters' MachineConfigs and for
// values chosen to tell number types and string styles apart.
func TestMCOYAMLIsSigsYAML(t *testing.T) {
	specs := map[string]mcfgv1.MachineConfigSpec{}
	odd := `{"ignition":{"version":"3.5.0"},"n":[0,-0,1,-1,42,2147483648,9223372036854775807,-9223372036854775808,9223372036854775808,18446744073709551615,18446744073709551616,1.5,-2.25,1e3,1E+3,1e-7,0.1,123456789012345678901234567890,1e400,-1e400],` +
		`"s":["","0","1.5","true","yes","no","~","null","2001-12-14","a: b","- x","#c","line\nbreak","  lead","trail  ","\u00e9t\u00e9","\u2028","<>&","\t","'q'","\"dq\"","data:,a%20b","` + string(bytes.Repeat([]byte("word "), 40)) + `"],` +
		`"b":[true,false,null],"m":{"z":1,"a":{"10":1,"9":2,"b":[]},"A":{}}}`
	specs["odd"] = mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(odd)}, OSImageURL: "quay.io/x@sha256:0", KernelArguments: []string{"a=1", "2"}, Extensions: []string{"usbguard"}, FIPS: true, KernelType: "realtime"}
	specs["empty"] = mcfgv1.MachineConfigSpec{}
	specs["null config"] = mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte("null")}}
	specs["indented config"] = mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte("{\n  \"ignition\": {\"version\": \"3.5.0\"},\n  \"x\": [ 1 , 2.0 ]\n}\n")}}
	sameAsSigsYAML(t, specs)
	t.Run("the real clusters' MachineConfigs", func(t *testing.T) {
		specs := map[string]mcfgv1.MachineConfigSpec{}
		for p, mc := range testkit.RealMachineConfigs(t) {
			specs[p] = mc.Spec
		}
		sameAsSigsYAML(t, specs)
	})
}

// sameAsSigsYAML checks that mcoYAML writes each spec as
// sigs.k8s.io/yaml.Marshal does.
func sameAsSigsYAML(t *testing.T, specs map[string]mcfgv1.MachineConfigSpec) {
	t.Helper()
	for name, spec := range specs {
		want, err := yaml.Marshal(spec)
		if err != nil {
			t.Fatalf("%s: sigs.k8s.io/yaml: %v", name, err)
		}
		got, err := mcoYAML(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: differs from sigs.k8s.io/yaml at byte %d: got %q, want %q", name, i, got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
		}
	}
}
