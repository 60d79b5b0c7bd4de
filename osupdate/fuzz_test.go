package osupdate

import (
	"bytes"
	"testing"
)

// The parsers read what host tools print, which ndp does not control:
// whatever they print, a parser answers or errs, and never panics.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{simulation, rpmOstreeStatus, bootcStatus(staged("x", true)),
		"ii \tapt\t2.6.1\niF \tchrony\t4.3\n", "NEEDRESTART-KSTA: 3\nNEEDRESTART-SVC: a.service\n",
		"CURRENT_OP=UPDATE_STATUS_IDLE\nPROGRESS=0.1\n", "ID=\"debian\"\nNAME='x y'\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseAptSimulation(b)
		_, _ = ParseDpkgStatus(b)
		_, _ = ParseNeedrestart(b)
		_ = ParseRebootRequiredPkgs(b)
		_, _ = ParseRpmOstreeStatus(b)
		_, _ = ParseUpdateEngineStatus(b)
		if h, err := ParseBootcStatus(b); err == nil {
			_ = BootcOutcome(h)
		}
		if rel, err := ParseOSRelease(bytes.NewReader(b)); err == nil && rel == nil {
			t.Fatal("no error and no map")
		}
	})
}
