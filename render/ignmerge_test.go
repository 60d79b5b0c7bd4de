package render

import (
	"fmt"
	"math/rand/v2"
	"testing"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
)

// randomIgnition is a valid config over a few shared paths and unit names,
// so that folding several of them collides in every way Ignition's merge
// knows: same list, another list sharing the key, fields set or unset,
// drop-ins, lists that ignore duplicates.
func randomIgnition(r *rand.Rand) igntypes.Config {
	maybe := func() bool { return r.IntN(2) == 0 }
	str := func(s string) *string {
		if maybe() {
			return nil
		}
		v := fmt.Sprintf("%s-%d", s, r.IntN(3))
		return &v
	}
	mode := func() *int {
		if maybe() {
			return nil
		}
		m := []int{0o644, 0o600, 0o755}[r.IntN(3)]
		return &m
	}
	flag := func() *bool {
		if maybe() {
			return nil
		}
		b := maybe()
		return &b
	}
	var c igntypes.Config
	c.Ignition.Version = "3.5.0"
	for _, p := range []string{"/etc/a", "/etc/b", "/etc/c", "/etc/d", "/etc/e"} {
		switch r.IntN(5) {
		case 0, 1:
			f := igntypes.File{Node: igntypes.Node{Path: p, Overwrite: flag()}, FileEmbedded1: igntypes.FileEmbedded1{Mode: mode()}}
			f.Contents.Source = str("data:,x")
			if r.IntN(4) == 0 {
				f.Append = []igntypes.Resource{{Source: str("data:,y")}}
			}
			c.Storage.Files = append(c.Storage.Files, f)
		case 2:
			c.Storage.Directories = append(c.Storage.Directories, igntypes.Directory{Node: igntypes.Node{Path: p, Overwrite: flag()}, DirectoryEmbedded1: igntypes.DirectoryEmbedded1{Mode: mode()}})
		case 3:
			c.Storage.Links = append(c.Storage.Links, igntypes.Link{Node: igntypes.Node{Path: p}, LinkEmbedded1: igntypes.LinkEmbedded1{Target: str("/target"), Hard: flag()}})
		}
	}
	for _, name := range []string{"a.service", "b.service", "c.service"} {
		if maybe() {
			continue
		}
		u := igntypes.Unit{Name: name, Enabled: flag(), Mask: flag(), Contents: str("[Service]")}
		for _, d := range []string{"10-a.conf", "20-b.conf"} {
			if maybe() {
				u.Dropins = append(u.Dropins, igntypes.Dropin{Name: d, Contents: str("[Unit]")})
			}
		}
		c.Systemd.Units = append(c.Systemd.Units, u)
	}
	if maybe() {
		c.Passwd.Users = []igntypes.PasswdUser{{Name: "core", SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{igntypes.SSHAuthorizedKey(fmt.Sprintf("ssh-ed25519 k%d", r.IntN(3)))}, PasswordHash: str("$6$")}}
	}
	if maybe() {
		c.KernelArguments.ShouldExist = []igntypes.KernelArgument{igntypes.KernelArgument(fmt.Sprintf("arg%d", r.IntN(3)))}
	}
	return c
}

// mergeIgnition folds configs exactly as Ignition's merge does, on
// thousands of random folds of 1 to 6 configs.
func TestMergeIgnitionIsIgnitions(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 2026))
	for i := range 3000 {
		var want, got igntypes.Config
		for j := range 1 + r.IntN(6) {
			c := randomIgnition(r)
			want, got = ign35.Merge(want, c), mergeIgnition(got, c)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("fold %d, config %d: mergeIgnition differs from ign35.Merge (-Ignition +mergeIgnition):\n%s", i, j, diff)
			}
		}
	}
}
