package mcorules_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorules"
)

// benchPair is a real 4.18 worker update (OS image, files and units
// changed), parsed beforehand as the webhook and the forecast keep configs.
func benchPair(b *testing.B) (from, to *machineconfig.Config) {
	b.Helper()
	dir := testkit.RequireMCORef(b, "realconfigs", "to-multi-arch")
	return testkit.ReadConfig(b, filepath.Join(dir, "rendered-worker-869799cd72c887a5da8248efd58bb2a9.yaml")),
		testkit.ReadConfig(b, filepath.Join(dir, "rendered-worker-a079988a31206987bed827f0242d7b3f.yaml"))
}

// BenchmarkDecide is one decision on a real pair; compare with
// BenchmarkDecideFloor, the one comparison of the two Ignition configs no
// decision can skip.
func BenchmarkDecide(b *testing.B) {
	from, to := benchPair(b)
	pol := mcorules.Defaults()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mcorules.Decide(mcorules.Input{From: from, To: to, Policies: pol}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecideFloor(b *testing.B) {
	from, to := benchPair(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = reflect.DeepEqual(from.Ignition, to.Ignition)
	}
}
