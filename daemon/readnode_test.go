package daemon

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// nodeReader answers Gets of a Node with node, counting them.
type nodeReader struct {
	node  *corev1.Node
	reads int
}

func (r *nodeReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	r.node.DeepCopyInto(obj.(*corev1.Node))
	return nil
}

func (r *nodeReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func nodeWith(state string) *corev1.Node {
	n := &corev1.Node{}
	n.Name = "n1"
	n.Annotations = map[string]string{ndpmcv1.StateAnnotation: state}
	return n
}

// TestReadNode: the daemon reads its Node from its cache, unless the cache
// has not shown its own last write yet: then it waits for the watch event
// (nil), and after staleReads such reads, or when another writer changed
// what it wrote, asks the API server once and forgets the write.
func TestReadNode(t *testing.T) {
	for _, tc := range []struct {
		name               string
		wrote              map[string]string
		cached             string
		want               []string // the state read at each of consecutive Syncs ("": none, wait)
		wantAPIReads       int
		wantWroteForgotten bool
	}{
		{"nothing written", nil, "Working", []string{"Working"}, 0, true},
		{"the cache shows the write", map[string]string{ndpmcv1.StateAnnotation: "Done"}, "Done", []string{"Done"}, 0, true},
		{"the cache lags: wait, then the API server", map[string]string{ndpmcv1.StateAnnotation: "Done"}, "Working",
			[]string{"", "", "", "", "Done-api"}, 1, true},
		{"a removal the cache shows", map[string]string{v1alpha1.RebootGrantAnnotation: ""}, "Done", []string{"Done"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := &nodeReader{node: nodeWith(tc.cached)}
			api := &nodeReader{node: nodeWith("Done-api")}
			d := &Daemon{NodeName: "n1", Nodes: cache, Reader: api, Status: &Status{NodeName: "n1", wrote: tc.wrote}}
			for i, want := range tc.want {
				n, err := d.readNode(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if n != nil {
					got = n.Annotations[ndpmcv1.StateAnnotation]
				}
				if got != want {
					t.Fatalf("read %d: state %q, want %q", i+1, got, want)
				}
			}
			if api.reads != tc.wantAPIReads {
				t.Errorf("%d reads from the API server, want %d", api.reads, tc.wantAPIReads)
			}
			if forgotten := d.Status.wrote == nil; forgotten != tc.wantWroteForgotten {
				t.Errorf("the write forgotten: %t, want %t", forgotten, tc.wantWroteForgotten)
			}
		})
	}
}
