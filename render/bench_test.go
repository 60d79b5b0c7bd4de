package render_test

import (
	"fmt"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/render"
)

// BenchmarkMerge renders a pool of 10 source MachineConfigs of 20 files
// and 2 units each (half of the paths shared, so that later sources
// override earlier ones), parsed beforehand as the webhook's previews keep
// them: the merge alone.
func BenchmarkMerge(b *testing.B) {
	var sources []render.Source
	for s := range 10 {
		ign := builder.Ignition()
		for f := range 20 {
			path := fmt.Sprintf("/etc/app/s%d-f%d.conf", s, f)
			if f%2 == 0 {
				path = fmt.Sprintf("/etc/app/shared-%d.conf", f)
			}
			ign.WithFile(path, fmt.Sprintf("source %d file %d\n", s, f))
		}
		for u := range 2 {
			ign.WithUnit(fmt.Sprintf("app-%d.service", u), fmt.Sprintf("[Service]\nExecStart=/bin/app %d\n", s))
		}
		src := source(fmt.Sprintf("%02d-app", s), ign, mcfgv1.MachineConfigSpec{})
		cfg, err := machineconfig.New(src.Name, src.Spec)
		if err != nil {
			b.Fatal(err)
		}
		src.Config = cfg
		sources = append(sources, src)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Merge("worker", sources); err != nil {
			b.Fatal(err)
		}
	}
}
