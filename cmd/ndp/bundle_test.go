package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/bundletest"
)

// `ndp bundle sign` reads a bundle within the limits `ndp plan` does: a
// 151-byte bundle whose tar header declares a 100 GiB file is refused,
// where OPA's reader alone would allocate the declared size and kill the
// process.
func TestBundleSignRefusesALyingBundle(t *testing.T) {
	dir := t.TempDir()
	key, _ := bundletest.Keys(t, "rsa")
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "bomb.tar.gz")
	if err := os.WriteFile(bomb, bundletest.Lying(t, "data.json", 100<<30), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := ndp(t, "bundle", "sign", "--signing-key", keyFile, bomb)
	if code != 1 || !strings.Contains(errOut, "bomb.tar.gz: invalid OPA bundle: file data.json is 100 GiB uncompressed") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
