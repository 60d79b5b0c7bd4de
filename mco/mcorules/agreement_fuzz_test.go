package mcorules_test

import (
	"strings"
	"testing"
)

// FuzzMCOAgreement: a real rendered config (chosen with the case index),
// a mutation class and up to four more mutations (extra, one class a byte),
// run live through mcorules.Decide and mco-decide; any disagreement on
// refusal, the action set, drain or reboot fails. Skipped without
// mco-decide (../shared/mco-ref; it fails instead with
// NDP_REQUIRE_MCO_REF=1). Seeds: testdata/fuzz/FuzzMCOAgreement.
func FuzzMCOAgreement(f *testing.F) {
	tool := mcoDecide(f)
	bs, err := loadBases()
	if err != nil {
		f.Fatalf("the real configs: %v", err)
	}
	f.Fuzz(func(t *testing.T, index uint16, class uint8, extra []byte) {
		if len(extra) > 4 {
			extra = extra[:4]
		}
		c := generateCase(int(index), bs, int(class), extra)
		got := decideNDP(parseCase(c))
		want, _, err := runTool(tool, t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		if !got.agrees(want) {
			t.Fatalf("case %d, class %s, base %s, %s, MachineConfiguration: %t\n  MCO:      %s\n  mcorules: %s\n%s",
				index, c.Class, c.Base, strings.Join(c.Desc, "; "), c.MC != nil, want, got, c.MC)
		}
	})
}
