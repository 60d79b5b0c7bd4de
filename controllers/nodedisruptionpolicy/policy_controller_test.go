package nodedisruptionpolicy

import (
	"testing"
	"time"
)

func TestRetryRejected(t *testing.T) {
	for _, tc := range []struct {
		field, want time.Duration
	}{
		{0, time.Minute},
		{2 * time.Second, 2 * time.Second},
	} {
		if got := (&Reconciler{RetryRejected: tc.field}).retryRejected(); got != tc.want {
			t.Errorf("RetryRejected %v: retried after %v, want %v", tc.field, got, tc.want)
		}
	}
}
