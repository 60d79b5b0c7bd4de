package mcorules_test

import (
	"testing"

	"github.com/ndp-dev/ndp/machineconfig"
)

func BenchmarkParseBase(b *testing.B) {
	bs, _ := loadBases()
	c := generateCase(0, bs, 0, nil)
	for b.Loop() {
		if _, err := machineconfig.Parse("x", c.New); err != nil {
			b.Fatal(err)
		}
	}
}
