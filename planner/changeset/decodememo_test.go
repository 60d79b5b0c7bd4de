package changeset

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/ndp-dev/ndp/machineconfig"
)

// decode keeps large decodings: the same data URL again (from another
// config) is the kept decoding, with the digest of its bytes; small files
// and failures are not kept, and only the last decodedKeep are.
func TestDecodeKeepsLargeContents(t *testing.T) {
	file := func(path, src string, comp *string) *igntypes.File {
		return &igntypes.File{Node: igntypes.Node{Path: path}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: &src, Compression: comp}}}
	}
	big := func(i int) (string, []byte) {
		data := []byte(strings.Repeat(fmt.Sprintf("-----CERT %d-----\n", i), bigContents/16))
		return "data:;base64," + base64.StdEncoding.EncodeToString(data), data
	}
	a, b := &machineconfig.Config{Name: "a"}, &machineconfig.Config{Name: "b"}
	src, data := big(0)
	d1, err := decode(a, file("/etc/pki/ca.pem", src, nil))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := "sha256:" + hex.EncodeToString(sum[:]); d1.digest != want || string(d1.data) != string(data) {
		t.Fatalf("digest %s, want %s (data equal: %v)", d1.digest, want, string(d1.data) == string(data))
	}
	d2, err := decode(b, file("/etc/other.pem", strings.Clone(src), nil))
	if err != nil || d2 != d1 {
		t.Errorf("the same large data URL again: %p, %v; want the kept %p", d2, err, d1)
	}
	gz := "gzip"
	if _, err := decode(b, file("/etc/pki/ca.pem", src, &gz)); err == nil {
		t.Error("the same data URL said to be gzip: no error (the kept plain decoding answered)")
	}
	small := "data:,small"
	s1, _ := decode(a, file("/etc/s", small, nil))
	s2, _ := decode(a, file("/etc/s", small, nil))
	if s1 == s2 {
		t.Error("a small file was kept")
	}
	for i := 1; i <= decodedKeep; i++ {
		s, _ := big(i)
		if _, err := decode(a, file("/etc/x", s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if d3, err := decode(a, file("/etc/pki/ca.pem", src, nil)); err != nil || d3 == d1 || d3.digest != d1.digest {
		t.Errorf("after %d others: %p (digest %s, %v); want a new decoding, same digest", decodedKeep, d3, d3.digest, err)
	}
}
