package testkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/controlplane"
)

// ControlPlaneOptions says which control plane a suite starts.
type ControlPlaneOptions struct {
	// Root is the repository root, relative to the test's package
	// directory ("../.." for test/cluster).
	Root string
	// Binaries are needed besides etcd and kube-apiserver (kubectl).
	Binaries []string
	// Webhooks registers the shipped webhook configuration, pointed at a
	// local port with a certificate of its own (Env.WebhookInstallOptions).
	Webhooks bool
	// NoCRDs starts a bare API server, without ndp's and openshift/api's
	// CRDs.
	NoCRDs bool
	// Kubeconfig writes an admin kubeconfig, for kubectl and ndp's
	// processes.
	Kubeconfig bool
	// Configure changes the environment before it starts (the API server's
	// flags or certificate directory).
	Configure func(*envtest.Environment)
}

// ControlPlane is a started kube-apiserver and etcd (envtest).
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
	// Client is an administrator's, with ndp's scheme.
	Client client.WithWatch
	// Assets is the directory of the control-plane binaries (kubectl's).
	Assets string
	// Kubeconfig is the admin kubeconfig's path, with Options.Kubeconfig.
	Kubeconfig string
	dir        string
}

// StartControlPlane starts a control plane, for a TestMain; Stop stops it.
func StartControlPlane(o ControlPlaneOptions) (*ControlPlane, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{}
	if cp.Assets, err = controlplane.Assets(root, append([]string{"etcd", "kube-apiserver"}, o.Binaries...)...); err != nil {
		return nil, err
	}
	cp.Env = controlplane.Environment(root, cp.Assets, o.Webhooks)
	if o.NoCRDs {
		cp.Env.CRDDirectoryPaths, cp.Env.ErrorIfCRDPathMissing = nil, false
	}
	if o.Configure != nil {
		o.Configure(cp.Env)
	}
	if cp.Config, err = cp.Env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if err := cp.connect(o); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

func (cp *ControlPlane) connect(o ControlPlaneOptions) error {
	var err error
	if cp.Client, err = client.NewWithWatch(cp.Config, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	if !o.Kubeconfig {
		return nil
	}
	if cp.dir, err = os.MkdirTemp("", "ndp-controlplane-"); err != nil {
		return err
	}
	cp.Kubeconfig, err = controlplane.AdminKubeconfig(cp.Env, cp.dir)
	return err
}

// Stop stops the control plane and removes what StartControlPlane wrote.
func (cp *ControlPlane) Stop() error {
	err := cp.Env.Stop()
	if cp.dir != "" {
		err = errors.Join(err, os.RemoveAll(cp.dir))
	}
	if err != nil {
		return fmt.Errorf("stopping the control plane: %w", err)
	}
	return nil
}

// Bin is the path of one of the Binaries.
func (cp *ControlPlane) Bin(name string) string { return filepath.Join(cp.Assets, name) }

// NewControlPlane starts a control plane for one test, stopped when it
// ends.
func NewControlPlane(t testing.TB, o ControlPlaneOptions) *ControlPlane {
	t.Helper()
	cp, err := StartControlPlane(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Log(err)
		}
	})
	return cp
}

// Main runs a suite's tests against a control plane started for them all
// (from a TestMain: os.Exit(testkit.Main(m, o, setup))). setup, when set,
// runs once the control plane is up and returns what to do after the
// tests, or an error that fails the suite.
func Main(m *testing.M, o ControlPlaneOptions, setup func(*ControlPlane) (after func(), err error)) int {
	cp, err := StartControlPlane(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if setup != nil {
		after, err := setup(cp)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if after != nil {
			defer after()
		}
	}
	return m.Run()
}
