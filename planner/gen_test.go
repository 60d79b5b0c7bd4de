package planner_test

// A generator of random MachineConfig pairs for the differential test, its
// fuzz target and nothing else. It builds a model of each config, renders
// it (with random but equivalent spellings: data-URL encodings, Ignition
// versions, TOML layout) to a MachineConfig JSON document, and computes from
// the two models what the planner must see: the change IDs and, for
// registries.conf, whether the change is no change, safe or unsafe. Those
// expectations come from the models, not from the planner's diff, so they
// check the diff too.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/vincent-petithory/dataurl"

	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/oracle"
	"github.com/ndp-dev/ndp/registries"
)

// genPair is one generated question and what the planner must see in it.
type genPair struct {
	Old, New   []byte // MachineConfig JSON documents
	SingleNode bool
	// WantChanges are the IDs of the changes, sorted.
	WantChanges []string
	// WantRegistries is the oracle verdict for registries.conf, "" when
	// that file does not change.
	WantRegistries string
}

// genByteSource is a rand.Source that plays back fuzz bytes, then goes on
// with a fixed PCG stream, so that any input yields a full pair. Byte k
// decides draw k/8 alone, which keeps the fuzzer's mutations local.
type genByteSource struct {
	data []byte
	pcg  *rand.PCG
}

func newGenByteSource(data []byte) *genByteSource {
	return &genByteSource{data: data, pcg: rand.NewPCG(0x6e6470, uint64(len(data)))}
}

func (s *genByteSource) Uint64() uint64 {
	if len(s.data) == 0 {
		return s.pcg.Uint64()
	}
	var b [8]byte
	n := copy(b[:], s.data)
	s.data = s.data[n:]
	return binary.LittleEndian.Uint64(b[:])
}

// Path pools: every path of the defaults table, paths inside its
// directories, near-misses on path boundaries and ordinary files.
var (
	genTablePaths = []string{
		"/etc/mco/internal-registry-pull-secret.json",
		"/var/lib/kubelet/config.json",
		"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
		"/etc/containers/policy.json",
		"/etc/containers/registries.conf",
		"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
		"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
	}
	genInsidePaths = []string{
		"/etc/nmstate/openshift/cluster.yml",
		"/etc/nmstate/openshift/a/b",
		"/etc/containers/registries.d/x.yaml",
		"/etc/containers/registries.d/sub/y.yaml",
		"/etc/crio/policies/p.json",
		"/etc/crio/policies/a/b.json",
		"/etc/kubernetes/credential-providers/ecr-credential-provider.yaml",
	}
	genNearMissPaths = []string{
		"/etc/crio/policiesX",
		"/etc/crio/policies",
		"/etc/crio/policies.d/p.json",
		"/etc/nmstate/openshift-other",
		"/etc/nmstate/openshift",
		"/etc/nmstate/openshiftx/a",
		"/etc/containers/registries.d",
		"/etc/containers/registries.dx/x.yaml",
		"/etc/containers/registries.conf.d/01.conf",
		"/etc/containers/registries.confX",
		"/etc/containers/policy.json.bak",
		"/etc/containers/policy.json/x",
		"/var/lib/kubelet/config.json.d/a",
		"/var/lib/kubelet/config",
		"/etc/machine-config-daemon/no-reboot/other.pub",
		"/etc/machine-config-daemon/no-reboot/containers-gpg.pub.old",
		"/etc/kubernetes/credential-providers",
		"/etc/kubernetes/credential-providersX/a.yaml",
		"/etc/pki/ca-trust/source/anchors/other.crt",
		"/etc/systemd/system/kubelet.service.d/10-other.conf",
	}
	genOtherPaths = []string{
		"/etc/chrony.conf",
		"/etc/kubernetes/kubelet.conf",
		"/usr/local/bin/configure-ovs.sh",
		"/etc/NetworkManager/conf.d/99-x.conf",
		"/etc/sysctl.d/99-inotify.conf",
		"/var/lib/kubelet/kubeconfig",
	}
	genUnitNames   = []string{"kubelet.service", "crio.service", "chronyd.service", "foo.service", "bar.timer", "baz.socket", "nodeip.path"}
	genDropinNames = []string{"10-a.conf", "20-b.conf", "30-mco.conf"}
	genSSHKeys     = []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOne admin@example.com",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITwo ops@example.com",
		"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQThree",
		"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYFour",
	}
	genOSImages = []string{"",
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2222222222222222222222222222222222222222222222222222222222222222",
	}
	genExtImages   = []string{"", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:3333333333333333333333333333333333333333333333333333333333333333"}
	genKargs       = []string{"nosmt", "mitigations=off", "systemd.unified_cgroup_hierarchy=1", "hugepages=1G", "console=ttyS0"}
	genExtensions  = []string{"usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "wasm"}
	genKernelTypes = []string{"", "default", "realtime", "64k-pages"}
	genIgnVersions = []string{"3.2.0", "3.3.0", "3.4.0", "3.5.0"}

	// No IPv6 literal: containers/image (CRI-O) refuses "[fd00::1]:5000"
	// as a search registry (its docker/reference DomainRegexp has no IPv6).
	genSearch = []string{"registry.access.redhat.com", "docker.io", "quay.io", "registry.example.com:5000", "registry.example.net:5000"}
	genScopes = []string{
		"quay.io/openshift-release-dev/ocp-release",
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev",
		"registry.redhat.io/ubi9",
		"docker.io/library",
		"gcr.io/b",
		"registry.example.com:5000/team/app",
		"*.example.org",
	}
	genMirrors = []string{"mirror.example.com:8443/ocp4", "backup.example.com/ocp4", "m3.local/x", "[fd00::2]:5000/y"}
	genPulls   = []string{"", "all", "digest-only", "tag-only"}
)

// Models.

type genFile struct {
	Path      string
	Data      []byte
	Remote    string // a remote source instead of Data: its URL
	Hash      string // its verification hash, if any
	Mode      *int
	User      genOwner
	Group     genOwner
	Overwrite *bool
}

type genOwner struct {
	ID   *int
	Name *string
}

type genDropin struct {
	Name     string
	Contents *string
}

type genUnit struct {
	Name     string
	Contents *string
	Enabled  *bool
	Mask     *bool
	Dropins  []genDropin
}

type genConfig struct {
	Version    string
	NoConfig   bool // spec.config left out (allowed when nothing is in it)
	Files      []genFile
	Units      []genUnit
	Core       bool // the core user is listed
	Keys       []string
	Hash       *string
	OSImage    string
	ExtImage   string
	Kargs      []string
	Extensions []string
	KernelType string
	// Reg is the model behind registries.conf when that file holds one;
	// RegBroken says the file's bytes are not a valid registries.conf.
	Reg       *genRegConf
	RegBroken bool
	// KeepRegBytes renders registries.conf with the bytes it has already.
	KeepRegBytes bool
}

type genRegMirror struct {
	Location string
	Pull     string // "" = unset
	Insecure bool
}

type genRegistry struct {
	Scope       string // the prefix, or the location when WritePrefix is false
	Location    string // "" only for a wildcard scope
	WritePrefix bool
	Blocked     bool
	Insecure    bool
	MBDO        bool // mirror-by-digest-only
	Mirrors     []genRegMirror
}

type genRegConf struct {
	Search        []string
	Regs          []genRegistry // in file order
	ShortNameMode string
	Extra         string // an unmodelled top-level key's value; "" = absent
	Comment       string
}

// pairGen draws everything from one *rand.Rand.
type pairGen struct {
	r *rand.Rand
}

func (g *pairGen) chance(p float64) bool { return g.r.Float64() < p }

func genPick[T any](g *pairGen, s []T) T { return s[g.r.IntN(len(s))] }

// genSubset draws a random subset of pool in random order.
func genSubset[T any](g *pairGen, pool []T, maxN int) []T {
	idx := g.r.Perm(len(pool))
	n := g.r.IntN(min(maxN, len(pool)) + 1)
	out := make([]T, 0, n)
	for _, i := range idx[:n] {
		out = append(out, pool[i])
	}
	return out
}

func genPtr[T any](v T) *T { return &v }

// genPairFrom generates one pair.
func genPairFrom(r *rand.Rand) genPair {
	g := &pairGen{r: r}
	old := g.config()
	nw := g.mutate(old)
	p := genPair{SingleNode: g.chance(0.25)}
	p.Old = g.render(old, "rendered-worker-old")
	if old.Reg != nil && reflect.DeepEqual(old.Reg, nw.Reg) && g.chance(0.6) {
		// Often leave registries.conf byte for byte as it was.
		nw.KeepRegBytes = true
		i := slices.IndexFunc(old.Files, func(f genFile) bool { return f.Path == registries.ConfPath })
		j := slices.IndexFunc(nw.Files, func(f genFile) bool { return f.Path == registries.ConfPath })
		nw.Files[j].Data = old.Files[i].Data
	}
	p.New = g.render(nw, "rendered-worker-new")
	p.WantChanges, p.WantRegistries = genExpect(old, nw)
	return p
}

func (g *pairGen) config() *genConfig {
	c := &genConfig{Version: genPick(g, genIgnVersions)}
	paths := map[string]bool{}
	for range g.r.IntN(9) {
		var pool []string
		switch g.r.IntN(4) {
		case 0:
			pool = genTablePaths
		case 1:
			pool = genInsidePaths
		case 2:
			pool = genNearMissPaths
		default:
			pool = genOtherPaths
		}
		paths[genPick(g, pool)] = true
	}
	if g.chance(0.5) {
		paths[registries.ConfPath] = true
	}
	if g.chance(0.3) {
		paths[fmt.Sprintf("/etc/gen/d%d/f%d", g.r.IntN(3), g.r.IntN(5))] = true
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		c.Files = append(c.Files, g.file(c, p))
	}
	g.r.Shuffle(len(c.Files), func(i, j int) { c.Files[i], c.Files[j] = c.Files[j], c.Files[i] })
	for _, name := range genSubset(g, genUnitNames, 3) {
		c.Units = append(c.Units, g.unit(name))
	}
	if g.chance(0.7) {
		c.Core = true
		c.Keys = genSubset(g, genSSHKeys, 3)
		if g.chance(0.4) {
			c.Hash = genPtr(genPick(g, []string{"$6$salt$aaaa", "$6$salt$bbbb"}))
		}
	}
	c.OSImage = genPick(g, genOSImages)
	c.ExtImage = genPick(g, genExtImages)
	c.Kargs = genSubset(g, genKargs, 3)
	c.Extensions = genSubset(g, genExtensions, 3)
	c.KernelType = genPick(g, genKernelTypes)
	c.NoConfig = len(c.Files) == 0 && len(c.Units) == 0 && !c.Core && g.chance(0.5)
	return c
}

func (g *pairGen) file(c *genConfig, path string) genFile {
	f := genFile{Path: path}
	switch {
	case path == registries.ConfPath:
		switch {
		case g.chance(0.03):
			c.Reg, c.RegBroken = nil, false
			f.Remote = "https://config.example.com/registries.conf"
		case g.chance(0.04):
			c.Reg, c.RegBroken = nil, true
			f.Data = []byte(genPick(g, []string{"[[registry]\nlocation = \"x\"\n", "short-name-mode = \"sometimes\"\n"}))
		default:
			c.Reg, c.RegBroken = g.regConf(), false
			f.Data = g.renderReg(c.Reg)
		}
	case g.chance(0.04):
		f.Remote = fmt.Sprintf("https://config.example.com/f%d", g.r.IntN(2))
		if g.chance(0.5) {
			f.Hash = "sha256-" + strings.Repeat(strconv.Itoa(g.r.IntN(2)), 64)
		}
	default:
		f.Data = g.contents()
	}
	f.Mode = genPick(g, []*int{nil, genPtr(0o644), genPtr(0o600), genPtr(0o755)})
	f.User = g.owner()
	f.Group = g.owner()
	f.Overwrite = genPick(g, []*bool{nil, genPtr(false), genPtr(true)})
	return f
}

func (g *pairGen) contents() []byte {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte("one line\n")
	default:
		var b bytes.Buffer
		for range 1 + g.r.IntN(4) {
			fmt.Fprintf(&b, "key%d = value %d; # ünïcode, %%, spaces & symbols\n", g.r.IntN(5), g.r.IntN(3))
		}
		return b.Bytes()
	}
}

func (g *pairGen) owner() genOwner {
	switch g.r.IntN(6) {
	case 0:
		return genOwner{Name: genPtr("root")}
	case 1:
		return genOwner{ID: genPtr(0)}
	case 2:
		return genOwner{Name: genPtr("core")}
	case 3:
		return genOwner{ID: genPtr(1000)}
	}
	return genOwner{}
}

func (g *pairGen) unitContents() *string {
	if g.chance(0.15) {
		return nil
	}
	return genPtr(fmt.Sprintf("[Unit]\nDescription=generated %d\n\n[Service]\nExecStart=/usr/bin/true %d\n\n[Install]\nWantedBy=multi-user.target\n", g.r.IntN(3), g.r.IntN(2)))
}

func (g *pairGen) unit(name string) genUnit {
	u := genUnit{Name: name, Contents: g.unitContents()}
	u.Enabled = genPick(g, []*bool{nil, genPtr(true), genPtr(false)})
	u.Mask = genPick(g, []*bool{nil, nil, genPtr(false), genPtr(true)})
	for _, d := range genSubset(g, genDropinNames, 2) {
		u.Dropins = append(u.Dropins, g.dropin(d))
	}
	return u
}

func (g *pairGen) dropin(name string) genDropin {
	if g.chance(0.1) {
		return genDropin{Name: name}
	}
	return genDropin{Name: name, Contents: genPtr(fmt.Sprintf("[Service]\nEnvironment=A=%d\n", g.r.IntN(3)))}
}

func (g *pairGen) regConf() *genRegConf {
	rc := &genRegConf{Comment: fmt.Sprintf("generated %d", g.r.IntN(3))}
	rc.Search = genSubset(g, genSearch, 3)
	for _, s := range genSubset(g, genScopes, 4) {
		rc.Regs = append(rc.Regs, g.registry(s))
	}
	if g.chance(0.2) {
		rc.ShortNameMode = genPick(g, []string{"enforcing", "permissive"})
	}
	if g.chance(0.1) {
		rc.Extra = "helper-a"
	}
	return rc
}

// registry draws a registry for a scope: mostly the MCO's shape, a
// location-only registry with digest-only mirrors.
func (g *pairGen) registry(scope string) genRegistry {
	r := genRegistry{Scope: scope, Location: scope}
	switch {
	case strings.HasPrefix(scope, "*."):
		r.WritePrefix = true
		if g.chance(0.5) {
			r.Location = ""
		} else {
			r.Location = genAltLocation(scope)
		}
	case g.chance(0.25):
		r.WritePrefix = true
		r.Location = genAltLocation(scope)
	default:
		r.WritePrefix = g.chance(0.3)
	}
	r.Blocked = g.chance(0.15)
	r.Insecure = g.chance(0.1)
	r.MBDO = g.chance(0.2)
	for _, m := range genSubset(g, genMirrors, 3) {
		r.Mirrors = append(r.Mirrors, g.mirror(&r, m))
	}
	if len(r.Mirrors) == 0 && g.chance(0.7) {
		r.Mirrors = append(r.Mirrors, g.mirror(&r, genPick(g, genMirrors)))
	}
	return r
}

// genAltLocation is a location other than the scope, distinct per scope so
// that no two registries share a location (which Parse would check for
// conflicting flags).
func genAltLocation(scope string) string {
	return "alt.example.net/" + strings.NewReplacer("*", "w", ":", "-", "[", "", "]", "").Replace(scope)
}

func (g *pairGen) mirror(r *genRegistry, loc string) genRegMirror {
	m := genRegMirror{Location: loc, Insecure: g.chance(0.1)}
	if !r.MBDO {
		// Mostly digest-only, as an ImageDigestMirrorSet renders.
		if g.chance(0.6) {
			m.Pull = "digest-only"
		} else {
			m.Pull = genPick(g, genPulls)
		}
	}
	return m
}

// Mutations.

func (g *pairGen) mutate(old *genConfig) *genConfig {
	c := genClone(old)
	c.Version = genPick(g, genIgnVersions)
	if g.chance(0.2) {
		// Only registries.conf: any other change tends to need a reboot,
		// which would hide the registries verdict in the merged plan.
		g.mutateRegistries(c)
	} else {
		g.mutateMany(c)
	}
	// The planner must read the new registries.conf (an unreadable one is
	// bad input, not a plan), so a broken file is only ever the old side.
	if c.RegBroken {
		i := slices.IndexFunc(c.Files, func(f genFile) bool { return f.Path == registries.ConfPath })
		c.Reg, c.RegBroken = g.regConf(), false
		c.Files[i].Data = g.renderReg(c.Reg)
	}
	// Taking the core user's last key and password hash away is refused
	// (it would lock administrators out), not planned: keep one key.
	if genLogin(old) && !genLogin(c) {
		c.Core, c.Keys = true, []string{genPick(g, genSSHKeys)}
	}
	// Every file is rendered afresh, so encodings change too.
	c.NoConfig = len(c.Files) == 0 && len(c.Units) == 0 && !c.Core && g.chance(0.5)
	return c
}

func genLogin(c *genConfig) bool {
	return c.Core && (len(c.Keys) > 0 || c.Hash != nil && *c.Hash != "")
}

func (g *pairGen) mutateMany(c *genConfig) {
	for range 1 + g.r.IntN(4) {
		switch g.r.IntN(10) {
		case 0, 1, 2:
			g.mutateFile(c)
		case 3:
			g.addFile(c)
		case 4:
			g.mutateUnit(c)
		case 5:
			g.mutateUser(c)
		case 6:
			g.mutateOS(c)
		default:
			g.mutateRegistries(c)
		}
	}
}

func (g *pairGen) addFile(c *genConfig) {
	pool := genPick(g, [][]string{genTablePaths, genInsidePaths, genNearMissPaths, genOtherPaths})
	p := genPick(g, pool)
	if slices.ContainsFunc(c.Files, func(f genFile) bool { return f.Path == p }) {
		return
	}
	c.Files = append(c.Files, g.file(c, p))
}

func (g *pairGen) mutateFile(c *genConfig) {
	if len(c.Files) == 0 {
		g.addFile(c)
		return
	}
	i := g.r.IntN(len(c.Files))
	f := &c.Files[i]
	switch g.r.IntN(8) {
	case 0:
		if f.Path == registries.ConfPath {
			c.Reg, c.RegBroken = nil, false
		}
		c.Files = slices.Delete(c.Files, i, i+1)
	case 1, 2:
		if f.Path == registries.ConfPath {
			g.mutateRegistries(c)
			return
		}
		if f.Remote != "" || g.chance(0.1) {
			*f = g.file(c, f.Path)
			return
		}
		f.Data = g.contents()
	case 3:
		f.Mode = genPick(g, []*int{nil, genPtr(0o644), genPtr(0o600), genPtr(0o755)})
	case 4:
		f.User = g.owner()
	case 5:
		f.Group = g.owner()
	case 6:
		f.Overwrite = genPick(g, []*bool{nil, genPtr(false), genPtr(true)})
	default:
		// Nothing but the encoding, which is drawn afresh at rendering.
	}
}

func (g *pairGen) mutateUnit(c *genConfig) {
	if len(c.Units) == 0 || g.chance(0.2) {
		name := genPick(g, genUnitNames)
		if !slices.ContainsFunc(c.Units, func(u genUnit) bool { return u.Name == name }) {
			c.Units = append(c.Units, g.unit(name))
		}
		return
	}
	i := g.r.IntN(len(c.Units))
	u := &c.Units[i]
	switch g.r.IntN(7) {
	case 0:
		c.Units = slices.Delete(c.Units, i, i+1)
	case 1:
		u.Contents = g.unitContents()
	case 2:
		u.Enabled = genPick(g, []*bool{nil, genPtr(true), genPtr(false)})
	case 3:
		u.Mask = genPick(g, []*bool{nil, genPtr(false), genPtr(true)})
	case 4:
		if len(u.Dropins) > 0 {
			j := g.r.IntN(len(u.Dropins))
			u.Dropins[j] = g.dropin(u.Dropins[j].Name)
		}
	case 5:
		if len(u.Dropins) > 0 && g.chance(0.5) {
			j := g.r.IntN(len(u.Dropins))
			u.Dropins = slices.Delete(u.Dropins, j, j+1)
		} else if name := genPick(g, genDropinNames); !slices.ContainsFunc(u.Dropins, func(d genDropin) bool { return d.Name == name }) {
			u.Dropins = append(u.Dropins, g.dropin(name))
		}
	default:
		g.r.Shuffle(len(u.Dropins), func(a, b int) { u.Dropins[a], u.Dropins[b] = u.Dropins[b], u.Dropins[a] })
	}
}

func (g *pairGen) mutateUser(c *genConfig) {
	switch g.r.IntN(5) {
	case 0:
		c.Core = !c.Core
		if !c.Core {
			c.Keys, c.Hash = nil, nil
		}
	case 1:
		c.Core = true
		c.Keys = genSubset(g, genSSHKeys, 4)
	case 2:
		g.r.Shuffle(len(c.Keys), func(a, b int) { c.Keys[a], c.Keys[b] = c.Keys[b], c.Keys[a] })
	default:
		c.Core = true
		c.Hash = genPick(g, []*string{nil, genPtr("$6$salt$aaaa"), genPtr("$6$salt$bbbb")})
	}
}

func (g *pairGen) mutateOS(c *genConfig) {
	switch g.r.IntN(8) {
	case 0:
		c.OSImage = genPick(g, genOSImages)
	case 1:
		c.ExtImage = genPick(g, genExtImages)
	case 2:
		c.Kargs = genSubset(g, genKargs, 4)
	case 3:
		g.r.Shuffle(len(c.Kargs), func(a, b int) { c.Kargs[a], c.Kargs[b] = c.Kargs[b], c.Kargs[a] })
	case 4:
		c.Extensions = genSubset(g, genExtensions, 4)
	case 5:
		g.r.Shuffle(len(c.Extensions), func(a, b int) { c.Extensions[a], c.Extensions[b] = c.Extensions[b], c.Extensions[a] })
	default:
		c.KernelType = genPick(g, genKernelTypes)
	}
}

// mutateRegistries changes registries.conf, mostly in ways that keep or
// break safety by one rule, sometimes only in its spelling.
func (g *pairGen) mutateRegistries(c *genConfig) {
	i := slices.IndexFunc(c.Files, func(f genFile) bool { return f.Path == registries.ConfPath })
	if i < 0 || c.Reg == nil {
		// Add the file, or replace a broken or remote one with a valid one.
		c.Reg, c.RegBroken = g.regConf(), false
		f := genFile{Path: registries.ConfPath, Mode: genPtr(0o644)}
		if i < 0 {
			c.Files = append(c.Files, f)
		} else {
			c.Files[i].Remote, c.Files[i].Hash = "", ""
		}
		return
	}
	rc := c.Reg
	// Unsafe edits are most edits: often keep to safe ones, so that the
	// reload-only verdict is common too.
	safeOnly := g.chance(0.4)
	for range 1 + g.r.IntN(3) {
		g.mutateRegConf(rc, safeOnly)
	}
}

// genSafeRegOps are the operations of mutateRegConf that keep a change safe.
var genSafeRegOps = []int{0, 5, 11, 14, 15, 16, 17, 19}

func (g *pairGen) mutateRegConf(rc *genRegConf, safeOnly bool) {
	reg := func() *genRegistry {
		if len(rc.Regs) == 0 {
			return nil
		}
		return &rc.Regs[g.r.IntN(len(rc.Regs))]
	}
	op := g.r.IntN(20)
	if safeOnly {
		op = genPick(g, genSafeRegOps)
	}
	switch op {
	case 0, 1: // append a search registry
		if s := genPick(g, genSearch); !slices.Contains(rc.Search, s) {
			rc.Search = append(rc.Search, s)
		}
	case 2: // prepend one
		if s := genPick(g, genSearch); !slices.Contains(rc.Search, s) {
			rc.Search = append([]string{s}, rc.Search...)
		}
	case 3: // remove one
		if len(rc.Search) > 0 {
			j := g.r.IntN(len(rc.Search))
			rc.Search = slices.Delete(rc.Search, j, j+1)
		}
	case 4: // reorder
		g.r.Shuffle(len(rc.Search), func(a, b int) { rc.Search[a], rc.Search[b] = rc.Search[b], rc.Search[a] })
	case 5, 6: // add a registry
		s := genPick(g, genScopes)
		if !slices.ContainsFunc(rc.Regs, func(r genRegistry) bool { return r.Scope == s }) {
			r := g.registry(s)
			if safeOnly || g.chance(0.5) { // an ImageDigestMirrorSet
				r.Blocked, r.Insecure, r.MBDO = false, false, false
				if len(r.Mirrors) == 0 {
					r.Mirrors = append(r.Mirrors, genRegMirror{Location: genPick(g, genMirrors)})
				}
				for k := range r.Mirrors {
					r.Mirrors[k].Pull = "digest-only"
				}
			}
			rc.Regs = append(rc.Regs, r)
		}
	case 7: // remove one
		if len(rc.Regs) > 0 {
			j := g.r.IntN(len(rc.Regs))
			rc.Regs = slices.Delete(rc.Regs, j, j+1)
		}
	case 8: // flip a flag
		if r := reg(); r != nil {
			if g.chance(0.5) {
				r.Blocked = !r.Blocked
			} else {
				r.Insecure = !r.Insecure
			}
		}
	case 9: // move the location
		if r := reg(); r != nil && !strings.HasPrefix(r.Scope, "*.") {
			if r.Location == r.Scope {
				r.Location, r.WritePrefix = genAltLocation(r.Scope), true
			} else {
				r.Location = r.Scope
			}
		}
	case 10: // toggle mirror-by-digest-only, where allowed
		if r := reg(); r != nil && !slices.ContainsFunc(r.Mirrors, func(m genRegMirror) bool { return m.Pull != "" }) {
			r.MBDO = !r.MBDO
		}
	case 11, 12: // add a mirror
		if r := reg(); r != nil {
			if loc := genPick(g, genMirrors); !slices.ContainsFunc(r.Mirrors, func(m genRegMirror) bool { return m.Location == loc }) {
				m := g.mirror(r, loc)
				if safeOnly && !r.MBDO {
					m.Pull = "digest-only"
				}
				r.Mirrors = append(r.Mirrors, m)
			}
		}
	case 13: // remove one
		if r := reg(); r != nil && len(r.Mirrors) > 0 {
			j := g.r.IntN(len(r.Mirrors))
			r.Mirrors = slices.Delete(r.Mirrors, j, j+1)
		}
	case 14: // change one's pull-from-mirror or insecure
		if r := reg(); r != nil && len(r.Mirrors) > 0 {
			m := &r.Mirrors[g.r.IntN(len(r.Mirrors))]
			if safeOnly { // make it digest-only, where allowed
				if !r.MBDO {
					m.Pull = "digest-only"
				}
			} else if g.chance(0.5) && !r.MBDO {
				m.Pull = genPick(g, genPulls)
			} else {
				m.Insecure = !m.Insecure
			}
		}
	case 15: // reorder mirrors
		if r := reg(); r != nil {
			g.r.Shuffle(len(r.Mirrors), func(a, b int) { r.Mirrors[a], r.Mirrors[b] = r.Mirrors[b], r.Mirrors[a] })
		}
	case 16: // reorder [[registry]] tables
		g.r.Shuffle(len(rc.Regs), func(a, b int) { rc.Regs[a], rc.Regs[b] = rc.Regs[b], rc.Regs[a] })
	case 17: // respell without changing the meaning
		if r := reg(); r != nil {
			switch {
			case r.Location == r.Scope && g.chance(0.5):
				r.WritePrefix = !r.WritePrefix
			case r.MBDO:
				r.MBDO = false
				for k := range r.Mirrors {
					r.Mirrors[k].Pull = "digest-only"
				}
			default:
				for k := range r.Mirrors {
					switch r.Mirrors[k].Pull {
					case "":
						r.Mirrors[k].Pull = "all"
					case "all":
						r.Mirrors[k].Pull = ""
					}
				}
			}
		}
	case 18:
		rc.ShortNameMode = genPick(g, []string{"", "enforcing", "permissive"})
	default:
		if safeOnly || g.chance(0.5) {
			rc.Comment = fmt.Sprintf("edited %d", g.r.IntN(1000))
		} else {
			rc.Extra = genPick(g, []string{"", "helper-a", "helper-b"})
		}
	}
}

func genClone(c *genConfig) *genConfig {
	n := *c
	n.Files = slices.Clone(c.Files)
	n.Units = slices.Clone(c.Units)
	for i := range n.Units {
		n.Units[i].Dropins = slices.Clone(n.Units[i].Dropins)
	}
	n.Keys = slices.Clone(c.Keys)
	n.Kargs = slices.Clone(c.Kargs)
	n.Extensions = slices.Clone(c.Extensions)
	if c.Reg != nil {
		r := *c.Reg
		r.Search = slices.Clone(r.Search)
		r.Regs = slices.Clone(r.Regs)
		for i := range r.Regs {
			r.Regs[i].Mirrors = slices.Clone(r.Regs[i].Mirrors)
		}
		n.Reg = &r
	}
	return &n
}

// Rendering.

func (g *pairGen) render(c *genConfig, name string) []byte {
	spec := map[string]any{}
	if !c.NoConfig {
		ign := map[string]any{"ignition": map[string]any{"version": c.Version}}
		var files []any
		for i := range c.Files {
			f := &c.Files[i]
			if f.Path == registries.ConfPath && c.Reg != nil && f.Remote == "" && !c.KeepRegBytes {
				f.Data = g.renderReg(c.Reg)
			}
			files = append(files, g.renderFile(f))
		}
		if files != nil {
			ign["storage"] = map[string]any{"files": files}
		}
		var units []any
		for _, u := range c.Units {
			units = append(units, genRenderUnit(u))
		}
		if units != nil {
			ign["systemd"] = map[string]any{"units": units}
		}
		if c.Core {
			core := map[string]any{"name": "core"}
			if len(c.Keys) > 0 {
				core["sshAuthorizedKeys"] = c.Keys
			}
			if c.Hash != nil {
				core["passwordHash"] = *c.Hash
			}
			ign["passwd"] = map[string]any{"users": []any{core}}
		}
		spec["config"] = ign
	}
	setString := func(k, v string) {
		if v != "" || g.chance(0.5) {
			spec[k] = v
		}
	}
	setString("osImageURL", c.OSImage)
	setString("baseOSExtensionsContainerImage", c.ExtImage)
	setString("kernelType", c.KernelType)
	if len(c.Kargs) > 0 || g.chance(0.3) {
		spec["kernelArguments"] = c.Kargs
	}
	if len(c.Extensions) > 0 || g.chance(0.3) {
		spec["extensions"] = c.Extensions
	}
	doc := map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// renderFile spells a file's contents one of several equivalent ways.
func (g *pairGen) renderFile(f *genFile) map[string]any {
	m := map[string]any{"path": f.Path}
	contents := map[string]any{}
	switch {
	case f.Remote != "":
		contents["source"] = f.Remote
		if f.Hash != "" {
			contents["verification"] = map[string]any{"hash": f.Hash}
		}
	case len(f.Data) == 0 && !genIsTrue(f.Overwrite) && g.chance(0.3):
		// No source at all: an empty file.
	default:
		switch g.r.IntN(5) {
		case 0, 1:
			contents["source"] = "data:," + dataurl.Escape(f.Data)
		case 2:
			contents["source"] = "data:;base64," + base64.StdEncoding.EncodeToString(f.Data)
		case 3:
			contents["source"] = "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(f.Data)
		default:
			var b bytes.Buffer
			zw := genGzip.Get().(*gzip.Writer)
			zw.Reset(&b)
			_, _ = zw.Write(f.Data)
			_ = zw.Close()
			genGzip.Put(zw)
			contents["source"] = "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
			contents["compression"] = "gzip"
		}
		if _, gz := contents["compression"]; !gz && g.chance(0.1) {
			contents["compression"] = ""
		}
	}
	if len(contents) > 0 {
		m["contents"] = contents
	}
	if f.Mode != nil {
		m["mode"] = *f.Mode
	}
	if o := genRenderOwner(f.User); o != nil {
		m["user"] = o
	}
	if o := genRenderOwner(f.Group); o != nil {
		m["group"] = o
	}
	if f.Overwrite != nil {
		m["overwrite"] = *f.Overwrite
	}
	return m
}

// genGzip reuses gzip writers: a new one allocates hundreds of kilobytes.
var genGzip = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func genRenderOwner(o genOwner) map[string]any {
	switch {
	case o.ID != nil:
		return map[string]any{"id": *o.ID}
	case o.Name != nil:
		return map[string]any{"name": *o.Name}
	}
	return nil
}

func genRenderUnit(u genUnit) map[string]any {
	m := map[string]any{"name": u.Name}
	if u.Contents != nil {
		m["contents"] = *u.Contents
	}
	if u.Enabled != nil {
		m["enabled"] = *u.Enabled
	}
	if u.Mask != nil {
		m["mask"] = *u.Mask
	}
	var dropins []any
	for _, d := range u.Dropins {
		dm := map[string]any{"name": d.Name}
		if d.Contents != nil {
			dm["contents"] = *d.Contents
		}
		dropins = append(dropins, dm)
	}
	if dropins != nil {
		m["dropins"] = dropins
	}
	return m
}

// renderReg writes a registries.conf for the model, with random layout:
// indentation, explicit false flags and an explicit empty short-name-mode
// mean the same as leaving them out.
func (g *pairGen) renderReg(rc *genRegConf) []byte {
	var b strings.Builder
	ind := genPick(g, []string{"", "  ", "\t"})
	q := strconv.Quote
	explicit := g.chance(0.3)
	if rc.Comment != "" {
		fmt.Fprintf(&b, "# %s\n", rc.Comment)
	}
	if len(rc.Search) > 0 || explicit {
		quoted := make([]string, len(rc.Search))
		for i, s := range rc.Search {
			quoted[i] = q(s)
		}
		fmt.Fprintf(&b, "unqualified-search-registries = [%s]\n", strings.Join(quoted, ", "))
	}
	if rc.ShortNameMode != "" || explicit {
		fmt.Fprintf(&b, "short-name-mode = %s\n", q(rc.ShortNameMode))
	}
	if rc.Extra != "" {
		fmt.Fprintf(&b, "additional-layer-store-auth-helper = %s\n", q(rc.Extra))
	}
	flag := func(indent, key string, v bool) {
		if v || explicit {
			fmt.Fprintf(&b, "%s%s = %t\n", indent, key, v)
		}
	}
	for _, r := range rc.Regs {
		b.WriteString("\n[[registry]]\n")
		switch {
		case r.WritePrefix:
			fmt.Fprintf(&b, "%sprefix = %s\n", ind, q(r.Scope))
		case explicit:
			fmt.Fprintf(&b, "%sprefix = \"\"\n", ind)
		}
		if r.Location != "" {
			loc := r.Location
			if g.chance(0.1) {
				loc += "/" // trailing slashes are stripped, as containers/image does
			}
			fmt.Fprintf(&b, "%slocation = %s\n", ind, q(loc))
		}
		flag(ind, "blocked", r.Blocked)
		flag(ind, "insecure", r.Insecure)
		flag(ind, "mirror-by-digest-only", r.MBDO)
		for _, m := range r.Mirrors {
			fmt.Fprintf(&b, "\n%s[[registry.mirror]]\n", ind)
			fmt.Fprintf(&b, "%s%slocation = %s\n", ind, ind, q(m.Location))
			if m.Pull != "" {
				fmt.Fprintf(&b, "%s%spull-from-mirror = %s\n", ind, ind, q(m.Pull))
			}
			flag(ind+ind, "insecure", m.Insecure)
		}
	}
	return []byte(b.String())
}

func genIsTrue(b *bool) bool { return b != nil && *b }

// Expectations, from the models alone.

func genExpect(old, nw *genConfig) (changes []string, regVerdict string) {
	add := func(id string) { changes = append(changes, id) }
	oldFiles := map[string]*genFile{}
	for i := range old.Files {
		oldFiles[old.Files[i].Path] = &old.Files[i]
	}
	newFiles := map[string]*genFile{}
	for i := range nw.Files {
		newFiles[nw.Files[i].Path] = &nw.Files[i]
	}
	for _, p := range slices.Sorted(maps.Keys(oldFiles)) {
		if newFiles[p] == nil {
			add("file:" + p)
		}
	}
	for p, nf := range newFiles {
		if of := oldFiles[p]; of == nil || genFileDiffers(of, nf) {
			add("file:" + p)
		}
	}
	oldUnits := map[string]genUnit{}
	for _, u := range old.Units {
		oldUnits[u.Name] = u
	}
	newUnits := map[string]genUnit{}
	for _, u := range nw.Units {
		newUnits[u.Name] = u
	}
	for name, ou := range oldUnits {
		if nu, ok := newUnits[name]; !ok || genUnitDiffers(ou, nu) {
			add("unit:" + name)
		}
	}
	for name := range newUnits {
		if _, ok := oldUnits[name]; !ok {
			add("unit:" + name)
		}
	}
	if !genSameSet(old.Keys, nw.Keys) {
		add("sshkey")
	}
	if genDeref(old.Hash) != genDeref(nw.Hash) {
		add("password")
	}
	if old.OSImage != nw.OSImage {
		add("os:" + changeset.FieldOSImageURL)
	}
	if old.ExtImage != nw.ExtImage {
		add("os:" + changeset.FieldBaseOSExtensionsContainerImage)
	}
	if !slices.Equal(old.Kargs, nw.Kargs) {
		add("os:" + changeset.FieldKernelArguments)
	}
	if !genSameSet(old.Extensions, nw.Extensions) {
		add("os:" + changeset.FieldExtensions)
	}
	if genKernelType(old.KernelType) != genKernelType(nw.KernelType) {
		add("os:" + changeset.FieldKernelType)
	}
	sort.Strings(changes)
	if slices.Contains(changes, "file:"+registries.ConfPath) {
		regVerdict = genRegistriesVerdict(old, nw, oldFiles[registries.ConfPath], newFiles[registries.ConfPath])
	}
	return changes, regVerdict
}

func genDeref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

func genSameSet(a, b []string) bool {
	return slices.Equal(slices.Compact(slices.Sorted(slices.Values(a))), slices.Compact(slices.Sorted(slices.Values(b))))
}

func genKernelType(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

// Ignition's defaults: mode 0644, owner root (uid 0); overwrite is the
// rendering's default, true (the MCO's MergeMachineConfigs and render.Merge
// set it on every file without one, and the daemon always writes).
func genMode(m *int) int {
	if m == nil {
		return 0o644
	}
	return *m
}

func genOwnerID(o genOwner) string {
	switch {
	case o.ID != nil:
		return strconv.Itoa(*o.ID)
	case o.Name != nil && *o.Name != "root":
		return *o.Name
	}
	return "0"
}

func genContentID(f *genFile) string {
	if f.Remote != "" {
		return f.Remote + "#" + f.Hash
	}
	sum := sha256.Sum256(f.Data)
	return hex.EncodeToString(sum[:])
}

func genFileDiffers(o, n *genFile) bool {
	return genContentID(o) != genContentID(n) || genMode(o.Mode) != genMode(n.Mode) ||
		genOwnerID(o.User) != genOwnerID(n.User) || genOwnerID(o.Group) != genOwnerID(n.Group) ||
		genOverwrite(o.Overwrite) != genOverwrite(n.Overwrite)
}

func genOverwrite(o *bool) bool { return o == nil || *o }

func genUnitDiffers(o, n genUnit) bool {
	dropins := func(ds []genDropin) map[string]string {
		m := map[string]string{}
		for _, d := range ds {
			m[d.Name] = genDeref(d.Contents)
		}
		return m
	}
	return genDeref(o.Contents) != genDeref(n.Contents) || !genSameTri(o.Enabled, n.Enabled) ||
		genDeref(o.Mask) != genDeref(n.Mask) || !maps.Equal(dropins(o.Dropins), dropins(n.Dropins))
}

// genSameTri: an unset "enabled" leaves the unit alone, unlike false.
func genSameTri(a, b *bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// genRegistriesVerdict applies the safety rule (docs/design.md#the-registries-safety-rule) to the two models:
// unknown contents are unsafe; an identical meaning is no change.
func genRegistriesVerdict(old, nw *genConfig, of, nf *genFile) string {
	if (of != nil && (of.Remote != "" || old.RegBroken)) || (nf != nil && (nf.Remote != "" || nw.RegBroken)) {
		return oracle.RegistriesUnsafe
	}
	o, n := &genRegConf{}, &genRegConf{}
	if of != nil {
		o = old.Reg
	}
	if nf != nil {
		n = nw.Reg
	}
	type mirror struct {
		pull     string
		insecure bool
	}
	type state struct {
		location          string
		blocked, insecure bool
		mirrors           []string // in order
		byLoc             map[string]mirror
	}
	states := func(rc *genRegConf) map[string]state {
		out := map[string]state{}
		for _, r := range rc.Regs {
			s := state{location: r.Location, blocked: r.Blocked, insecure: r.Insecure, byLoc: map[string]mirror{}}
			for _, m := range r.Mirrors {
				pull := m.Pull
				if pull == "" {
					pull = "all"
					if r.MBDO {
						pull = "digest-only"
					}
				}
				s.mirrors = append(s.mirrors, m.Location)
				s.byLoc[m.Location] = mirror{pull, m.Insecure}
			}
			out[r.Scope] = s
		}
		return out
	}
	os, ns := states(o), states(n)
	same := slices.Equal(o.Search, n.Search) && o.ShortNameMode == n.ShortNameMode && o.Extra == n.Extra &&
		maps.EqualFunc(os, ns, func(a, b state) bool {
			return a.location == b.location && a.blocked == b.blocked && a.insecure == b.insecure &&
				slices.Equal(a.mirrors, b.mirrors) && maps.Equal(a.byLoc, b.byLoc)
		})
	if same {
		return oracle.RegistriesNone
	}
	unsafe := o.ShortNameMode != n.ShortNameMode || o.Extra != n.Extra ||
		len(n.Search) < len(o.Search) || !slices.Equal(o.Search, n.Search[:len(o.Search)])
	for scope, a := range os {
		b, kept := ns[scope]
		if !kept || a.location != b.location || a.blocked != b.blocked || a.insecure != b.insecure {
			unsafe = true
			continue
		}
		for loc, am := range a.byLoc {
			// An existing mirror made digest-only is safe (as in the MCO).
			if bm, ok := b.byLoc[loc]; !ok || am.insecure != bm.insecure || am.pull != bm.pull && bm.pull != "digest-only" {
				unsafe = true
			}
		}
		for loc, bm := range b.byLoc {
			if _, ok := a.byLoc[loc]; !ok && bm.pull != "digest-only" {
				unsafe = true
			}
		}
	}
	for scope, b := range ns {
		if _, existed := os[scope]; existed {
			continue
		}
		if len(b.mirrors) == 0 || b.blocked || b.insecure || (b.location != "" && b.location != scope) {
			unsafe = true
		}
		for _, m := range b.byLoc {
			if m.pull != "digest-only" {
				unsafe = true
			}
		}
	}
	if unsafe {
		return oracle.RegistriesUnsafe
	}
	return oracle.RegistriesSafe
}
