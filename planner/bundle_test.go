package planner_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/bundletest"
	"github.com/ndp-dev/ndp/planner"
)

const exampleBundle = "../examples/bundles/haproxy"

// testKeys returns a PEM private key and its PEM public key.
func testKeys(t *testing.T, kind string) (private, public []byte) {
	t.Helper()
	var key any
	var pub any
	switch kind {
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		key, pub = k, &k.PublicKey
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		key, pub = k, &k.PublicKey
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}

func buildExampleBundle(t *testing.T, signingKey []byte) []byte {
	t.Helper()
	b, err := planner.BuildBundle(exampleBundle, planner.BundleOptions{SigningKey: signingKey})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := planner.WriteBundle(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func alterBundleFile(t *testing.T, tarball []byte, name string) []byte {
	t.Helper()
	out, err := bundletest.AlterFile(tarball, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSignedBundle(t *testing.T) {
	for _, kind := range []string{"rsa", "ecdsa"} {
		t.Run(kind, func(t *testing.T) {
			private, public := testKeys(t, kind)
			signed := buildExampleBundle(t, private)
			pol, err := planner.ReadBundle("haproxy.tar.gz", bytes.NewReader(signed), public)
			if err != nil {
				t.Fatalf("a signed bundle is rejected: %v", err)
			}
			if pol.Name != "haproxy" || len(pol.Modules) != 1 || len(pol.Tests) != 1 {
				t.Errorf("policy %+v", pol)
			}
			var out bytes.Buffer
			if sum, err := planner.RunRegoTests(context.Background(), []planner.Policy{pol}, nil, &out, planner.TestOptions{}); err != nil || sum.Passed < 5 || sum.Failed+sum.Errored != 0 {
				t.Errorf("the bundle's own tests: %+v %v\n%s", sum, err, out.String())
			}

			_, err = planner.ReadBundle("haproxy.tar.gz", bytes.NewReader(alterBundleFile(t, signed, "haproxy.rego")), public)
			if err == nil || !strings.Contains(err.Error(), "digest mismatch") || !strings.Contains(err.Error(), "haproxy.rego") {
				t.Errorf("a bundle with one byte changed: %v", err)
			}
			_, err = planner.ReadBundle("haproxy.tar.gz", bytes.NewReader(buildExampleBundle(t, nil)), public)
			if err == nil || !strings.Contains(err.Error(), "signature") {
				t.Errorf("an unsigned bundle with a key configured: %v", err)
			}
			_, otherPublic := testKeys(t, kind)
			if _, err = planner.ReadBundle("haproxy.tar.gz", bytes.NewReader(signed), otherPublic); err == nil {
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
		if _, _, got := planner.RootsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("RootsOverlap(%v, %v) = %t", tc.a, tc.b, got)
		}
	}
}
