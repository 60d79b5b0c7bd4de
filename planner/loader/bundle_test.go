package loader_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/bundletest"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

const exampleBundle = "../../examples/bundles/haproxy"

func TestSignedBundle(t *testing.T) {
	for _, kind := range []string{"rsa", "ecdsa"} {
		t.Run(kind, func(t *testing.T) {
			private, public := bundletest.Keys(t, kind)
			signed := bundletest.Build(t, exampleBundle, private)
			pol, err := loader.ReadBundle("haproxy.tar.gz", bytes.NewReader(signed), public)
			if err != nil {
				t.Fatalf("a signed bundle is rejected: %v", err)
			}
			if pol.Name != "haproxy" || len(pol.Modules) != 1 || len(pol.Tests) != 1 {
				t.Errorf("policy %+v", pol)
			}
			var out bytes.Buffer
			if sum, err := engine.RunRegoTests(context.Background(), []policy.Policy{pol}, nil, &out, engine.TestOptions{}); err != nil || sum.Passed < 5 || sum.Failed+sum.Errored != 0 {
				t.Errorf("the bundle's own tests: %+v %v\n%s", sum, err, out.String())
			}

			_, err = loader.ReadBundle("haproxy.tar.gz", bytes.NewReader(bundletest.Alter(t, signed, "haproxy.rego")), public)
			if err == nil || !strings.Contains(err.Error(), "digest mismatch") || !strings.Contains(err.Error(), "haproxy.rego") {
				t.Errorf("a bundle with one byte changed: %v", err)
			}
			_, err = loader.ReadBundle("haproxy.tar.gz", bytes.NewReader(bundletest.Build(t, exampleBundle, nil)), public)
			if err == nil || !strings.Contains(err.Error(), "signature") {
				t.Errorf("an unsigned bundle with a key configured: %v", err)
			}
			_, otherPublic := bundletest.Keys(t, kind)
			if _, err = loader.ReadBundle("haproxy.tar.gz", bytes.NewReader(signed), otherPublic); err == nil {
				t.Error("a bundle signed by another key is accepted")
			}
		})
	}
}

func TestBundleRootsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want bool
	}{
		{[]string{"ndp/policy/haproxy"}, []string{"ndp/policy/nginx"}, false},
		{[]string{"ndp/policy/haproxy"}, []string{"ndp/policy/haproxy"}, true},
		{[]string{"ndp/policy/haproxy"}, []string{"ndp/policy/haproxy/extra"}, true},
		{[]string{"ndp/policy/ha"}, []string{"ndp/policy/haproxy"}, false},
	} {
		if _, _, got := loader.RootsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("RootsOverlap(%v, %v) = %t", tc.a, tc.b, got)
		}
	}
}
