// Package bundletest helps tests build, sign and tamper with OPA bundles
// the way a template owner, and an attacker between them and a cluster,
// would.
package bundletest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/planner"
)

// Keys generates a PEM private key ("rsa" or "ecdsa") and its PEM public key.
func Keys(t testing.TB, kind string) (private, public []byte) {
	t.Helper()
	var key, pub any
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
	default:
		t.Fatalf("unknown key kind %q", kind)
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

// Build makes a bundle tarball of a policy directory, signed when a key
// is given.
func Build(t testing.TB, dir string, signingKey []byte) []byte {
	t.Helper()
	b, err := planner.BuildBundle(dir, planner.BundleOptions{SigningKey: signingKey})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := planner.WriteBundle(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Alter is AlterFile for tests.
func Alter(t testing.TB, tarball []byte, name string) []byte {
	t.Helper()
	out, err := AlterFile(tarball, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AlterFile changes one byte of the named file inside a bundle tarball
// (the first byte of "service" becomes "S") and repacks it.
func AlterFile(tarball []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	altered := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == name {
			i := bytes.Index(data, []byte("service"))
			if i < 0 {
				return nil, fmt.Errorf("%s has no %q to alter", name, "service")
			}
			data[i] = 'S'
			altered = true
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if !altered {
		return nil, fmt.Errorf("no %s in the bundle", name)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
