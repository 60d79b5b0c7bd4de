package mcorules_test

import (
	"encoding/json"
	"reflect"
	"testing"

	ignparse "github.com/coreos/ignition/v2/config/v3_5"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/machineconfig"
)

// The MCO compares Ignition structs with reflect.DeepEqual, where a nil
// list and an empty one differ ("directories": [] against none is a
// refused update). Decide compares what machineconfig parses; this checks
// that it is exactly what Ignition's own parse and translation to 3.5 give
// (what the MCO's ParseAndConvertConfig gives for a 3.x config), on every
// real MachineConfig and on configs with empty and absent lists in each
// spec version.
func TestParseKeepsIgnitionsNilAndEmpty(t *testing.T) {
	t.Run("empty and absent lists in each spec version", func(t *testing.T) {
		var raws [][]byte
		var names []string
		for _, v := range []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
			for _, body := range []string{
				`"storage":{"files":[],"directories":[],"links":[]},"systemd":{"units":[]},"passwd":{"users":[]}`,
				`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"},"append":[]}]},"systemd":{"units":[{"name":"a.service","dropins":[]}]},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":[]}]}`,
				`"storage":{},"systemd":{},"passwd":{}`,
				``,
			} {
				raw := `{"ignition":{"version":"` + v + `"}`
				if body != "" {
					raw += "," + body
				}
				raws, names = append(raws, []byte(raw+"}")), append(names, v+" "+body)
			}
		}
		sameParseAsIgnition(t, raws, names)
	})
	t.Run("the real clusters' MachineConfigs", func(t *testing.T) {
		var raws [][]byte
		var names []string
		for p, mc := range testkit.RealMachineConfigs(t) {
			if len(mc.Spec.Config.Raw) == 0 {
				continue // no Ignition config (99-worker-realtime): nothing to compare
			}
			raws, names = append(raws, mc.Spec.Config.Raw), append(names, p)
		}
		if len(raws) == 0 {
			t.Fatal("no MachineConfig in the real configs")
		}
		sameParseAsIgnition(t, raws, names)
	})
}

// sameParseAsIgnition checks that machineconfig parses each raw config
// (named by names) to exactly what Ignition's own parse gives.
func sameParseAsIgnition(t *testing.T, raws [][]byte, names []string) {
	t.Helper()
	for i, raw := range raws {
		want, _, err := ignparse.ParseCompatibleVersion(raw)
		if err != nil {
			t.Fatalf("%s: Ignition: %v", names[i], err)
		}
		got, err := machineconfig.New("x", mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}})
		if err != nil {
			t.Fatalf("%s: machineconfig: %v", names[i], err)
		}
		if !reflect.DeepEqual(want, got.Ignition) {
			a, _ := json.Marshal(want)
			b, _ := json.Marshal(got.Ignition)
			t.Errorf("%s: machineconfig's parse differs from Ignition's:\n%s\n%s", names[i], a, b)
		}
	}
}
