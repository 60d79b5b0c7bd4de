package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

func TestDrainTimeout(t *testing.T) {
	for _, c := range []struct {
		in   DrainTimeout
		want string
	}{
		{DrainTimeout{30 * time.Minute, DrainTimeoutSkip}, "30m0s;Skip"},
		{DrainTimeout{90 * time.Second, DrainTimeoutDeletePods}, "1m30s;DeletePods"},
		{DrainTimeout{time.Hour, DrainTimeoutWait}, "1h0m0s;Wait"},
	} {
		if s := c.in.String(); s != c.want {
			t.Errorf("%+v: %q, want %q", c.in, s, c.want)
		}
		back, err := ParseDrainTimeout(c.want)
		if err != nil || back != c.in {
			t.Errorf("%q: read back %+v, %v", c.want, back, err)
		}
	}
	for _, bad := range []string{"", "30m", "30m;", ";Skip", "30m;skip", "0s;Skip", "-1m;Wait", "soon;DeletePods", "30m;Skip;x"} {
		if _, err := ParseDrainTimeout(bad); err == nil || !strings.Contains(err.Error(), DrainTimeoutAnnotation) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
