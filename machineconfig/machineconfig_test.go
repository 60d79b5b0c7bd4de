package machineconfig

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	ign30types "github.com/coreos/ignition/v2/config/v3_0/types"
	ign31types "github.com/coreos/ignition/v2/config/v3_1/types"
	ign32types "github.com/coreos/ignition/v2/config/v3_2/types"
	ign33types "github.com/coreos/ignition/v2/config/v3_3/types"
	ign34types "github.com/coreos/ignition/v2/config/v3_4/types"
	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	ignvalidate "github.com/coreos/ignition/v2/config/validate"
)

// parseSeeds are spec.config documents: valid ones of every version and the
// ways Ignition rejects a config.
var parseSeeds = []string{
	`{"ignition":{"version":"3.5.0"}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,a"}},{"path":"/etc/b","contents":{"source":"data:;base64,YQ=="}}]},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\n"}]}}`,
	`{"ignition":{"version":"3.5.0"},"unknownKey":1,"storage":{"files":[{"path":"/etc/a","unknown":true}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a"},{"path":"/etc/a"}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a"}],"directories":[{"path":"/etc/a"}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"relative"}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:;base64,!!"}}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a","compression":"zip"}}]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a","verification":{"hash":"sha512-00"}}}]}}`,
	`{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service"},{"name":"a.service"}]}}`,
	`{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"noextension"}]}}`,
	`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k","k"]}]}}`,
	`{"ignition":{"version":"3.5.0"},"kernelArguments":{"shouldExist":["a"],"shouldNotExist":["a"]}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","mode":"420"}]}}`,
	`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`,
	`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"relative/path","contents":{"source":"data:,x"}}]}}`,
	`{"ignition":{"version":"3.3.0"},"kernelArguments":{"shouldExist":["nosmt"]}}`,
	`{"ignition":{"version":"3.2.0"},"storage":{"luks":[{"name":"l","device":"/dev/vda"}]}}`,
	`{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`,
	`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`,
	`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/a"},{"path":"/etc/a"}]}}`,
	`{"ignition":{"version":"3.5.0+meta"}}`,
	`{"ignition":{"version":"3.6.0-experimental"}}`,
	`{"ignition":{"version":"2.2.0"}}`,
	`{"ignition":{"version":"3.9.0"}}`,
	`{"ignition":{"version":"three"}}`,
	`{"ignition":{}}`,
	`{"ignition":{"version":3}}`,
	`{"ignition":{"version":"3.5.0"},"storage":{"files":{}}}`,
	`{"ignition":{"version":"3.5.0"`,
	`[]`,
}

// checkParse holds parseIgnition to ign.ParseCompatibleVersion: whatever it
// accepts, Ignition accepts, with the same config.
func checkParse(t *testing.T, raw []byte) {
	t.Helper()
	got, ok := parseIgnition(raw)
	want, _, err := ign.ParseCompatibleVersion(raw)
	if !ok {
		// Declining is always safe (Ignition decides), but it must not
		// decline a valid config of an exact version: that is the fast path.
		var v struct{ Ignition struct{ Version string } }
		_ = json.Unmarshal(raw, &v)
		if err == nil && exactVersion[v.Ignition.Version] {
			t.Errorf("%s: fast path declined a valid %s config", raw, v.Ignition.Version)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: fast path accepted what Ignition rejects: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: fast path gives\n%+v\nIgnition gives\n%+v", raw, got, want)
	}
}

var exactVersion = map[string]bool{"3.0.0": true, "3.1.0": true, "3.2.0": true, "3.3.0": true, "3.4.0": true, "3.5.0": true}

func TestParseIgnitionMatchesIgnition(t *testing.T) {
	for _, s := range parseSeeds {
		checkParse(t, []byte(s))
	}
}

func FuzzParseIgnition(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkParse(t, raw) })
}

// TestFastValidMatchesIgnition fills configs of every spec version at random
// from small pools (so that duplicates, bad paths and bad URLs are frequent)
// and holds fastValid to Ignition's validation.
func TestFastValidMatchesIgnition(t *testing.T) {
	configs := []func() any{
		func() any { return new(igntypes.Config) },
		func() any { return new(ign34types.Config) },
		func() any { return new(ign33types.Config) },
		func() any { return new(ign32types.Config) },
		func() any { return new(ign31types.Config) },
		func() any { return new(ign30types.Config) },
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[bool]int{}
	for i := range 3000 {
		cfg := configs[i%len(configs)]()
		fill(rng, reflect.ValueOf(cfg).Elem(), 0)
		if rng.IntN(4) > 0 { // mostly the right version, which Ignition checks
			reflect.ValueOf(cfg).Elem().FieldByName("Ignition").FieldByName("Version").SetString(fmt.Sprintf("3.%d.0", 5-i%len(configs)))
		}
		want := !ignvalidate.ValidateWithContext(reflect.ValueOf(cfg).Elem().Interface(), nil).IsFatal()
		got, ok := fastValid(cfg)
		if !ok {
			t.Fatalf("fastValid declined %T %+v", cfg, cfg)
		}
		if got != want {
			t.Fatalf("fastValid %t, Ignition %t, for %T %+v", got, want, cfg, cfg)
		}
		counts[want]++
	}
	t.Logf("valid/invalid %d/%d", counts[true], counts[false])
	if counts[true] < 100 || counts[false] < 100 {
		t.Fatalf("valid/invalid %d/%d: the generator should give plenty of both", counts[true], counts[false])
	}
}

var fillStrings = []string{
	"", "/etc/a", "/etc/b", "/dev/vda", "relative", "a.service", "b.service", "a.conf", "xfs", "ext4", "none",
	"data:,a", "data:;base64,YQ==", "data:;base64,!!", "https://example.com/a", "s3://b/k", "ftp://x", "gzip", "zip",
	"sha512-" + strings.Repeat("0", 128), "sha256-00", "core", "root", "nosmt", "3.5.0", "raid1", "md0", "Mozilla",
	"http://proxy:3128", "tpm2", "sha1", "0", "a=b",
}

// fill sets v at random: each pointer set or nil, each slice 0 to 2 long, fewer fields the deeper,
// strings from fillStrings, numbers small.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fillStrings[rng.IntN(len(fillStrings))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt([]int64{-1, 0, 1, 420, 493, 4096, 1 << 20}[rng.IntN(7)])
	case reflect.Pointer:
		if depth < 8 && rng.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(rng, v.Elem(), depth+1)
		}
	case reflect.Slice:
		if depth < 8 {
			n := rng.IntN(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(rng, v.Index(i), depth+1)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.IntN(depth+2) == 0 {
				fill(rng, v.Field(i), depth+1)
			}
		}
	default:
		panic(fmt.Sprintf("fill: unexpected kind %s in %s", v.Kind(), v.Type()))
	}
}
