package machineconfig

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/vincent-petithory/dataurl"
)

// dataURLSeeds are the forms MachineConfigs carry, and edge cases of both.
var dataURLSeeds = []string{
	"data:,",
	"data:,server%20ntp.example.com%20iburst%0A",
	"data:," + url.PathEscape("# a real file\nkey = \"value\" [x] {y} | ^ ` \\ <tag> #frag\n\x00\x7f\u00e9"),
	"data:,%",
	"data:,%4",
	"data:,%zz",
	"data:,a b",
	"data:,caf\u00e9",
	"data:,%E9",
	"data:;base64,",
	"data:;base64," + base64.StdEncoding.EncodeToString([]byte("hello, world\n")),
	"data:;base64,aGVsbG8=\n",
	"data:;base64,aGVsbG8",
	"data:;base64,aGVs bG8=",
	"data:;base64,aGVs\r\nbG8=",
	"data:;base64,%41",
	"data:text/plain;charset=utf-8;base64,aGVsbG8=",
	"data:text/plain,abc",
	"DATA:,abc",
	"data:;base64;,abc",
	"http://example.com/x",
}

// decodeDataURL gives what dataurl gives, data or error, for every seed; its
// fast path takes the plain and base64 forms it was written for.
func TestDecodeDataURL(t *testing.T) {
	for _, s := range dataURLSeeds {
		checkDataURL(t, s)
	}
	big := "data:;base64," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n"), 20000))
	for _, s := range []string{"data:,server%20ntp.example.com%0A", big} {
		if _, ok := fastDataURL(s); !ok {
			t.Errorf("%.40q: not on the fast path", s)
		}
	}
}

func checkDataURL(t *testing.T, s string) {
	t.Helper()
	got, err := decodeDataURL(s)
	du, wantErr := dataurl.DecodeString(s)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: decodeDataURL error %v, dataurl error %v", s, err, wantErr)
	case err != nil:
		return
	case !bytes.Equal(got, du.Data):
		t.Fatalf("%q: decodeDataURL %q, dataurl %q", s, got, du.Data)
	}
	// The fast path answers only what dataurl answers the same.
	if fast, ok := fastDataURL(s); ok && !bytes.Equal(fast, du.Data) {
		t.Fatalf("%q: fast path %q, dataurl %q", s, fast, du.Data)
	}
	if _, ok := fastDataURL(s); !ok && (strings.HasPrefix(s, plainDataPrefix) || strings.HasPrefix(s, base64DataPrefix)) {
		t.Fatalf("%q: dataurl decodes it, the fast path does not", s)
	}
}

// FuzzDataURL: decodeDataURL and dataurl.DecodeString agree on any input
// (data or error), and the fast path takes every plain or base64 data URL
// dataurl accepts.
func FuzzDataURL(f *testing.F) {
	for _, s := range dataURLSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDataURL(t, s)
		checkDataURL(t, plainDataPrefix+s)
		checkDataURL(t, base64DataPrefix+s)
	})
}

// BenchmarkDataURL decodes a 1 MB base64 CA bundle and a 4 KB
// percent-encoded file with decodeDataURL and with dataurl (the floor it
// replaced), in the same run.
func BenchmarkDataURL(b *testing.B) {
	pem := bytes.Repeat([]byte("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEbm9kZTANBgkqhkiG9w0BAQsFADBsMRAwDgYDVQQGEwdV\n"), 1<<20/94)
	text := strings.Repeat("server ntp.example.com iburst # \"quoted\" 100%\n", 4096/46)
	for name, src := range map[string]string{
		"base64-1MB":  "data:;base64," + base64.StdEncoding.EncodeToString(pem),
		"percent-4KB": "data:," + url.PathEscape(text),
	} {
		b.Run(name+"/ndp", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := decodeDataURL(src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/dataurl", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := dataurl.DecodeString(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
