package mcorules

import (
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
)

func registriesIgn(contents string) *igntypes.Config {
	if contents == "-" {
		return &igntypes.Config{}
	}
	return &igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{ignFile(RegistriesConfPath, contents)}}}
}

const (
	regQuay = "[[registry]]\nlocation = \"quay.io\"\n"
	mirrorA = "[[registry.mirror]]\nlocation = \"a.example.com\"\npull-from-mirror = \"digest-only\"\n"
	mirrorB = "[[registry.mirror]]\nlocation = \"b.example.com\"\npull-from-mirror = \"digest-only\"\n"
	mirrorT = "[[registry.mirror]]\nlocation = \"t.example.com\"\n"
)

func TestRegistriesChangeSafe(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		safe           bool
		why            string
	}{
		{"comment only", regQuay + mirrorA, "# c\n" + regQuay + mirrorA, true, "safe"},
		{"both absent", "-", "-", true, "safe"},
		{"digest-only mirror added", regQuay + mirrorA, regQuay + mirrorA + mirrorB, true, "safe"},
		{"tag mirror added", regQuay + mirrorA, regQuay + mirrorA + mirrorT, false, "mirror t.example.com was added"},
		{"tag mirror added, registry digest-only", regQuay + "mirror-by-digest-only = true\n" + mirrorA, regQuay + "mirror-by-digest-only = true\n" + mirrorA + mirrorT, true, "safe"},
		{"mirror removed", regQuay + mirrorA + mirrorB, regQuay + mirrorA, false, "mirror b.example.com was removed"},
		{"mirrors reordered", regQuay + mirrorA + mirrorB, regQuay + mirrorB + mirrorA, true, "safe"},
		{"mirror loosened", regQuay + mirrorA, regQuay + strings.Replace(mirrorA, "digest-only", "all", 1), false, "pull-from-mirror changed"},
		{"mirror tightened", regQuay + mirrorT, regQuay + strings.Replace(mirrorT, "\n", "\npull-from-mirror = \"digest-only\"\n", 1), true, "safe"},
		{"registry removed", regQuay + mirrorA, "", false, "registry quay.io was removed"},
		{"registry blocked", regQuay, regQuay + "blocked = true\n", false, "blocked changed"},
		{"registry insecure", regQuay, regQuay + "insecure = true\n", false, "insecure changed"},
		{"location under the same prefix", "[[registry]]\nprefix = \"p.io\"\nlocation = \"a.io\"\n", "[[registry]]\nprefix = \"p.io\"\nlocation = \"b.io\"\n", false, "location changed"},
		{"new registry, digest-only mirrors", "", regQuay + mirrorA, true, "safe"},
		{"new registry, tag mirror", "", regQuay + mirrorT, false, "was added with a mirror"},
		{"new registry, no mirror", "", regQuay, false, "was added with a mirror"},
		{"new registry, no mirror, digest-only", "", regQuay + "mirror-by-digest-only = true\n", true, "safe"},
		{"search registry appended", "unqualified-search-registries = [\"a\"]\n", "unqualified-search-registries = [\"a\", \"b\"]\n", true, "safe"},
		{"search registry removed", "unqualified-search-registries = [\"a\", \"b\"]\n", "unqualified-search-registries = [\"a\"]\n", false, "was removed"},
		{"search registries reordered", "unqualified-search-registries = [\"a\", \"b\"]\n", "unqualified-search-registries = [\"b\", \"a\"]\n", false, "entry 0 changed"},
		{"file added", "-", regQuay + mirrorA, true, "safe"},
		{"file removed", regQuay, "-", false, "was removed"},
		{"credential helpers", "", "credential-helpers = [\"x\"]\n", true, "safe"},
	} {
		safe, why, err := registriesChangeSafe(registriesIgn(tc.old), registriesIgn(tc.new))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if safe != tc.safe || !strings.Contains(why, tc.why) {
			t.Errorf("%s: safe=%t %q, want %t %q", tc.name, safe, why, tc.safe, tc.why)
		}
	}
}

func TestRegistriesChangeErrors(t *testing.T) {
	bad := &igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{{Node: igntypes.Node{Path: RegistriesConfPath}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: ptr("https://example.com/r.conf")}}}}}}
	for _, tc := range []struct {
		name     string
		old, new *igntypes.Config
		want     string
	}{
		{"not TOML", registriesIgn(""), registriesIgn("[[registry]\n"), "new /etc/containers/registries.conf: failed decoding TOML"},
		{"not a data URL", bad, registriesIgn(""), "old /etc/containers/registries.conf: failed decoding its data URL"},
	} {
		if _, _, err := registriesChangeSafe(tc.old, tc.new); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
}
