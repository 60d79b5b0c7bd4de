package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `ndp bundle sign` reads a bundle within the limits `ndp plan` does: a
// 151-byte bundle whose tar header declares a 100 GiB file is refused,
// where OPA's reader alone would allocate the declared size and kill the
// process.
func TestBundleSignRefusesALyingBundle(t *testing.T) {
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "/data.json", Mode: 0o644, Size: 100 << 30, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil { // the archive ends after the header
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "bomb.tar.gz")
	if err := os.WriteFile(bomb, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := ndp(t, "bundle", "sign", "--signing-key", keyFile, bomb)
	if code != 1 || !strings.Contains(errOut, "bomb.tar.gz: invalid OPA bundle: file data.json is 100 GiB uncompressed") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
