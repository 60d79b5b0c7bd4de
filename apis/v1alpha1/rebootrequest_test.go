package v1alpha1

import (
	"strings"
	"testing"
)

func TestRebootGrant(t *testing.T) {
	for _, g := range []RebootGrant{{Request: "2026-11-29T10:00:00Z", Drain: true}, {Request: "2026-11-29T10:00:00Z"}} {
		back, err := ParseRebootGrant(g.String())
		if err != nil || back != g {
			t.Errorf("%+v: round trip %+v, %v", g, back, err)
		}
	}
	for _, bad := range []string{"", "2026-11-29T10:00:00Z", "2026-11-29T10:00:00Z;maybe", "yesterday;drain"} {
		if _, err := ParseRebootGrant(bad); err == nil || !strings.Contains(err.Error(), RebootGrantAnnotation) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
