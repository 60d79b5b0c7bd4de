package mcoguard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestDecide(t *testing.T) {
	const (
		co = "ClusterOperator machine-config"
		ds = "DaemonSet openshift-machine-config-operator/machine-config-daemon"
	)
	for _, tc := range []struct {
		name      string
		o         Observed
		standDown bool
		found     []string
	}{
		{name: "nothing: ndp acts"},
		{name: "the ClusterOperator alone", o: Observed{ClusterOperator: true}, standDown: true, found: []string{co}},
		{name: "the DaemonSet alone", o: Observed{DaemonSet: true}, standDown: true, found: []string{ds}},
		{name: "both", o: Observed{ClusterOperator: true, DaemonSet: true}, standDown: true, found: []string{co, ds}},
		{name: "the DaemonSet alone, skipping the node", o: Observed{DaemonSet: true, DaemonSetSkipsNode: true}, found: []string{ds}},
		{name: "the DaemonSet skips the node, the ClusterOperator is there", o: Observed{ClusterOperator: true, DaemonSet: true, DaemonSetSkipsNode: true}, standDown: true, found: []string{co, ds}},
		{name: "skipping without a DaemonSet means nothing", o: Observed{DaemonSetSkipsNode: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.o)
			if v.StandDown != tc.standDown {
				t.Errorf("StandDown = %t, want %t", v.StandDown, tc.standDown)
			}
			if diff := cmp.Diff(tc.found, v.Found); diff != "" {
				t.Errorf("Found (-want +got):\n%s", diff)
			}
			switch {
			case !tc.standDown && v.Message != "":
				t.Errorf("Message = %q, want none", v.Message)
			case tc.standDown:
				want := "the Machine Config Operator manages this cluster (" + strings.Join(tc.found, ", ") + "): ndp stands down (it renders no configuration and writes no node); remove one of the two"
				if v.Message != want {
					t.Errorf("Message = %q, want %q", v.Message, want)
				}
			}
		})
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := configv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestObserve(t *testing.T) {
	clusterOperator := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: ClusterOperatorName}}
	daemonSet := func(sel map[string]string) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: DaemonSetNamespace, Name: DaemonSetName}}
		ds.Spec.Template.Spec.NodeSelector = sel
		return ds
	}
	linux := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"kubernetes.io/os": "linux"}}}
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "config.openshift.io", Kind: "ClusterOperator"}, SearchedVersions: []string{"v1"}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, DaemonSetName, errors.New("no"))
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		node    *corev1.Node
		getErr  func(client.Object) error // replaces the fake's answer when it returns non-nil
		want    Observed
		wantErr string
	}{
		{name: "nothing"},
		{name: "the ClusterOperator", objs: []client.Object{clusterOperator}, want: Observed{ClusterOperator: true}},
		{name: "another ClusterOperator is not the MCO's", objs: []client.Object{&configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "ndp"}}}},
		{name: "the DaemonSet, no node asked about", objs: []client.Object{daemonSet(map[string]string{"kubernetes.io/os": "linux"})}, want: Observed{DaemonSet: true}},
		{name: "the DaemonSet runs on the node", objs: []client.Object{daemonSet(map[string]string{"kubernetes.io/os": "linux"})}, node: linux, want: Observed{DaemonSet: true}},
		{name: "the DaemonSet without a nodeSelector runs everywhere", objs: []client.Object{daemonSet(nil)}, node: linux, want: Observed{DaemonSet: true}},
		{name: "the DaemonSet skips the node", objs: []client.Object{daemonSet(map[string]string{"kubernetes.io/os": "windows"})}, node: linux, want: Observed{DaemonSet: true, DaemonSetSkipsNode: true}},
		{name: "a DaemonSet of that name elsewhere is not the MCO's", objs: []client.Object{&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: DaemonSetName}}}},
		{name: "no ClusterOperator kind: a plain Kubernetes cluster", objs: []client.Object{daemonSet(nil)},
			getErr: func(o client.Object) error {
				if _, ok := o.(*configv1.ClusterOperator); ok {
					return noMatch
				}
				return nil
			}, want: Observed{DaemonSet: true}},
		{name: "a refused read is an error, not an absence", objs: []client.Object{clusterOperator},
			getErr: func(o client.Object) error {
				if _, ok := o.(*appsv1.DaemonSet); ok {
					return forbidden
				}
				return nil
			}, wantErr: "reading DaemonSet openshift-machine-config-operator/machine-config-daemon: daemonsets.apps \"machine-config-daemon\" is forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.objs...)
			if tc.getErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if err := tc.getErr(obj); err != nil {
						return err
					}
					return c.Get(ctx, key, obj, opts...)
				}})
			}
			got, err := Observe(context.Background(), b.Build(), tc.node)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Observe = %+v, want %+v", got, tc.want)
			}
		})
	}
}
