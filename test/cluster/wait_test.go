package cluster

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patience bounds every wait for a controller: they act within seconds,
// but a loaded 2-core machine is slow, and a wait that holds returns as soon
// as it does (a cluster test once failed after 20s on a loaded machine).
const patience = 2 * time.Minute

// eventually polls ok until it holds, failing the test after patience.
func eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", patience, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitObject polls the named cluster-scoped object until ok accepts it, and
// returns it.
func waitObject[T any, P interface {
	*T
	client.Object
}](t testing.TB, name, what string, ok func(P) bool) P {
	t.Helper()
	var got P
	eventually(t, name+": "+what, func() bool {
		got = P(new(T))
		return k8s.Get(context.Background(), client.ObjectKey{Name: name}, got) == nil && ok(got)
	})
	return got
}
