package cluster

import (
	"context"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitObject polls the named cluster-scoped object until ok accepts it, and
// returns it.
func waitObject[T any, P interface {
	*T
	client.Object
}](t testing.TB, name, what string, ok func(P) bool) P {
	t.Helper()
	var got P
	testkit.Until(t, name+": "+what, func() bool {
		got = P(new(T))
		return k8s.Get(context.Background(), client.ObjectKey{Name: name}, got) == nil && ok(got)
	})
	return got
}
