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
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/loader"
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
	b, err := loader.BuildBundle(dir, loader.BundleOptions{SigningKey: signingKey, Check: planner.CheckPolicy})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := loader.WriteBundle(&buf, b); err != nil {
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

// Tarball is a bundle tarball of the given files (name → contents), as
// a bundle written by hand: no check that it makes a valid bundle.
func Tarball(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: "/" + name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	return closeTarball(t, tw, gz, &buf)
}

// closeTarball ends the archive and is its bytes.
func closeTarball(t testing.TB, tw *tar.Writer, gz *gzip.Writer, buf *bytes.Buffer) []byte {
	t.Helper()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Lying is a bundle tarball of one tar header that declares a file of size
// bytes and no contents: a reader that allocates what headers declare
// (OPA's does) tries to allocate size bytes at once.
func Lying(t testing.TB, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "/" + name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil { // the archive ends after the header
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Bomb is a bundle tarball of a few hundred KiB that inflates to size
// bytes: one Rego file, package ndp.policy.bomb, mostly a comment.
func Bomb(t testing.TB, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	head := "package ndp.policy.bomb\n\n#"
	if err := tw.WriteHeader(&tar.Header{Name: "/bomb.rego", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	for left := size - len(head); left > 0; left -= len(chunk) {
		if _, err := tw.Write(chunk[:min(left, len(chunk))]); err != nil {
			t.Fatal(err)
		}
	}
	return closeTarball(t, tw, gz, &buf)
}
