package testkit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// SetNodeConfig plays ndp-daemon: each of nodes now runs config, its
// current and desired config. Retried on conflict: the rollout controller
// patches nodes too.
func SetNodeConfig(t testing.TB, c client.Client, config string, nodes ...string) {
	t.Helper()
	for _, name := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var n corev1.Node
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
				return err
			}
			n.Annotations[ndpmcv1.CurrentConfigAnnotation] = config
			n.Annotations[ndpmcv1.DesiredConfigAnnotation] = config
			return c.Update(context.Background(), &n)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
