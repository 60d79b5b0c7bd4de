package mcorules_test

// The mutation generator of the agreement test (agreement_test.go): seeded,
// deterministic OLD → NEW pairs made from the real rendered MachineConfigs
// of testdata/agreement/realconfigs.tar.zst (a copy of
// ../shared/mco-ref/realconfigs/*/rendered-*.yaml), each optionally with a
// MachineConfiguration whose spec.nodeDisruptionPolicy is random but valid
// by openshift/api's rules. The same index always gives the same bytes: the
// recording keeps a digest of them, so a changed generator is seen.

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"
)

// generatorSeed is the seed of every case (with its index); changing it,
// or anything below that shapes a case, needs a new recording (make
// mco-agreement).
const generatorSeed = 29

// realConfigsArchive holds the real rendered configs, zstd-compressed tar
// (the twenty files share most of their bytes: 3.3 MB become 56 KB).
const realConfigsArchive = "testdata/agreement/realconfigs.tar.zst"

type obj = map[string]any

// base is one real rendered config: its cluster, pool, name and the whole
// MachineConfig as generic JSON (numbers kept as written).
type base struct {
	Cluster, Pool, File string
	doc                 obj
}

var (
	basesOnce sync.Once
	bases     []*base
	basesErr  error
)

// loadBases reads the archive once.
func loadBases() ([]*base, error) {
	basesOnce.Do(func() {
		data, err := os.ReadFile(realConfigsArchive)
		if err != nil {
			basesErr = err
			return
		}
		dec, err := zstd.NewReader(bytes.NewReader(data))
		if err != nil {
			basesErr = err
			return
		}
		defer dec.Close()
		tr := tar.NewReader(dec)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				basesErr = err
				return
			}
			raw, err := io.ReadAll(tr)
			if err != nil {
				basesErr = err
				return
			}
			j, err := yaml.YAMLToJSON(raw)
			if err != nil {
				basesErr = fmt.Errorf("%s: %w", h.Name, err)
				return
			}
			doc, err := decodeJSON(j)
			if err != nil {
				basesErr = fmt.Errorf("%s: %w", h.Name, err)
				return
			}
			cluster, file := path.Split(h.Name)
			pool := strings.SplitN(strings.TrimPrefix(file, "rendered-"), "-", 2)[0]
			bases = append(bases, &base{Cluster: strings.TrimSuffix(cluster, "/"), Pool: pool, File: h.Name, doc: doc})
		}
		sort.Slice(bases, func(i, j int) bool { return bases[i].File < bases[j].File })
		if len(bases) == 0 {
			basesErr = fmt.Errorf("%s holds no rendered configs", realConfigsArchive)
		}
	})
	return bases, basesErr
}

func decodeJSON(j []byte) (obj, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var o obj
	if err := d.Decode(&o); err != nil {
		return nil, err
	}
	return o, nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case obj:
		c := make(obj, len(t))
		for k, x := range t {
			c[k] = deepCopy(x)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = deepCopy(x)
		}
		return c
	}
	return v
}

// mc is a MachineConfig being mutated.
type mc struct{ o obj }

func (m mc) spec() obj { return child(m.o, "spec") }
func (m mc) ign() obj  { return child(m.spec(), "config") }

// child returns o[k] as an object, creating it.
func child(o obj, k string) obj {
	if c, ok := o[k].(obj); ok {
		return c
	}
	c := obj{}
	o[k] = c
	return c
}

func list(o obj, k string) []any {
	l, _ := o[k].([]any)
	return l
}

func (m mc) files() []any               { return list(child(m.ign(), "storage"), "files") }
func (m mc) setFiles(l []any)           { child(m.ign(), "storage")["files"] = l }
func (m mc) units() []any               { return list(child(m.ign(), "systemd"), "units") }
func (m mc) setUnits(l []any)           { child(m.ign(), "systemd")["units"] = l }
func (m mc) users() []any               { return list(child(m.ign(), "passwd"), "users") }
func (m mc) storageList(k string) []any { return list(child(m.ign(), "storage"), k) }
func (m mc) setStorageList(k string, l []any) {
	child(m.ign(), "storage")[k] = l
}

func (m mc) file(p string) obj {
	for _, f := range m.files() {
		if f.(obj)["path"] == p {
			return f.(obj)
		}
	}
	return nil
}

func (m mc) unit(n string) obj {
	for _, u := range m.units() {
		if u.(obj)["name"] == n {
			return u.(obj)
		}
	}
	return nil
}

func (m mc) core() obj {
	for _, u := range m.users() {
		if u.(obj)["name"] == "core" {
			return u.(obj)
		}
	}
	u := obj{"name": "core"}
	child(m.ign(), "passwd")["users"] = append(m.users(), u)
	return u
}

func genDataURL(b []byte) string {
	return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(b)
}

// contents decodes a file entry's data URL ("" when it has none).
func contents(f obj) []byte {
	src, _ := child(f, "contents")["source"].(string)
	if src == "" {
		return nil
	}
	d, err := dataurl.DecodeString(src)
	if err != nil {
		return []byte(src)
	}
	return d.Data
}

func newFile(p string, data []byte) obj {
	return obj{"path": p, "mode": json.Number("420"), "overwrite": true, "contents": obj{"source": genDataURL(data)}}
}

// putFile writes p with data, adding the entry when it is not there.
func (m mc) putFile(p string, data []byte) {
	if f := m.file(p); f != nil {
		child(f, "contents")["source"] = genDataURL(data)
		return
	}
	m.setFiles(append(m.files(), newFile(p, data)))
}

func (m mc) removeFile(p string) bool {
	fs, ok := withoutEntry(m.files(), "path", p)
	if ok {
		m.setFiles(fs)
	}
	return ok
}

func (m mc) removeUnit(n string) bool {
	us, ok := withoutEntry(m.units(), "name", n)
	if ok {
		m.setUnits(us)
	}
	return ok
}

// withoutEntry is a copy of the Ignition list l without its first entry
// whose key is value, and whether there was one.
func withoutEntry(l []any, key, value string) ([]any, bool) {
	i := slices.IndexFunc(l, func(e any) bool { return e.(obj)[key] == value })
	if i < 0 {
		return l, false
	}
	return slices.Delete(slices.Clone(l), i, i+1), true
}

func pick[T any](r *rand.Rand, l []T) T { return l[r.IntN(len(l))] }

// gen is one case being built.
type gen struct {
	r        *rand.Rand
	old, new mc
	policy   *policyCfg
	desc     []string
	n        int // a counter for unique content
}

// newGen starts a case's generator on copies of the bases old and new:
// two bases are a real pair, said so; one (new is old) gets the new
// config renamed <its name>-<tag>-<i>. bases names them for the case.
func newGen(r *rand.Rand, old, new *base, tag string, i int) (g *gen, bases string) {
	g = &gen{r: r, old: mc{deepCopy(old.doc).(obj)}, new: mc{deepCopy(new.doc).(obj)}}
	if new != old {
		g.say("real pair")
		return g, old.File + " → " + new.File
	}
	child(g.new.o, "metadata")["name"] = fmt.Sprintf("%s-%s-%d", old.doc["metadata"].(obj)["name"], tag, i)
	return g, old.File
}

func (g *gen) say(format string, args ...any) { g.desc = append(g.desc, fmt.Sprintf(format, args...)) }

// absentFalseOrTrue leaves the bool field key of entry out, false or
// true, at random.
func (g *gen) absentFalseOrTrue(entry obj, key string) {
	switch g.r.IntN(3) {
	case 0:
		delete(entry, key)
	case 1:
		entry[key] = false
	default:
		entry[key] = true
	}
}

func (g *gen) text(what string) []byte {
	g.n++
	return fmt.Appendf(nil, "# %s, generated change %d of %d\nkey=%d\n", what, g.n, g.r.Uint32()%1000, g.r.IntN(1<<20))
}

// ensureFile makes p a file of OLD and of NEW (as OLD has it), unless it
// is one already.
func (g *gen) ensureFile(p string) {
	if g.old.file(p) == nil {
		g.old.putFile(p, g.text(p))
	}
	if g.new.file(p) == nil {
		g.new.setFiles(append(g.new.files(), deepCopy(g.old.file(p))))
	}
}

// changeFile changes, adds or removes p in NEW (adding it to OLD first when
// the mutation is a change or removal of a file the base lacks).
func (g *gen) changeFile(p string) {
	switch g.r.IntN(6) {
	case 0: // added
		g.old.removeFile(p)
		g.new.putFile(p, g.text(p))
		g.say("add file %s", p)
	case 1: // removed
		g.ensureFile(p)
		g.new.removeFile(p)
		g.say("remove file %s", p)
	case 2: // mode
		g.ensureFile(p)
		g.new.file(p)["mode"] = json.Number(pick(g.r, []string{"384", "493", "511", "256"}))
		g.say("mode of %s", p)
	default: // contents
		g.ensureFile(p)
		g.new.putFile(p, append(contents(g.new.file(p)), g.text(p)...))
		g.say("change file %s", p)
	}
}

// Paths of the MCO's default policies (pkg/apihelpers defaultClusterPolicies,
// paths from pkg/daemon/constants), and ndp's.
var defaultPaths = []string{
	"/var/lib/kubelet/config.json",
	"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
	"/etc/containers/policy.json",
	"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
	"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
	"/usr/local/bin/load-registry-image.sh",
	"/etc/pki/ca-trust/source/anchors/iri-root-ca.crt",
	"/etc/mco/internal-registry-pull-secret.json",
	// Default directories, as paths of files.
	"/etc/iri-registry",
	"/etc/crio/policies",
	"/etc/containers/registries.d",
	"/etc/nmstate/openshift",
	"/etc/kubernetes/credential-providers",
}

var underDefaultDirs = []string{
	"/etc/containers/registries.d/quay.io.yaml",
	"/etc/containers/registries.d/x",
	"/etc/containers/registries.d/sub/dir/y.yaml",
	"/etc/crio/policies/openshift-config.json",
	"/etc/crio/policies/a/b.json",
	"/etc/kubernetes/credential-providers/a/b",
	"/etc/kubernetes/credential-providers/ecr-credential-provider.yaml",
	"/etc/nmstate/openshift/br-ex.yml",
	"/etc/nmstate/openshift/cluster.yml",
	"/etc/iri-registry/config.yml",
	"/etc/iri-registry/certs/tls.crt",
}

var nearMisses = []string{
	"/etc/containers/registries.d2",
	"/etc/containers/registries.d2/x",
	"/etc/containers/registries.dx.yaml",
	"/etc/crio/policiesX",
	"/etc/crio/policies.json",
	"/etc/crio/policy",
	"/etc/containers/policy.json.bak",
	"/etc/containers/policy.json/x",
	"/etc/containers/registries.conf.d/99-x.conf",
	"/etc/containers/registries.conf.bak",
	"/etc/kubernetes/credential-providers-x/a",
	"/etc/kubernetes/credential-provider",
	"/var/lib/kubelet/config.json2",
	"/var/lib/kubelet/config",
	"/etc/nmstate/openshiftX",
	"/etc/nmstate/nmstate.conf",
	"/etc/iri-registryX",
	"/etc/pki/ca-trust/source/anchors/other.crt",
	"/etc/machine-config-daemon/no-reboot/other.pub",
	"/etc/systemd/system/kubelet.service.d/41-other.conf",
	"/etc/mco/internal-registry-pull-secret.json.bak",
	"/etc/containers",
	"/etc/crio",
}

var arbitraryPaths = []string{
	"/etc/chrony.conf",
	"/etc/motd",
	"/etc/sysctl.d/99-custom.conf",
	"/etc/modprobe.d/blacklist.conf",
	"/usr/local/bin/custom.sh",
	"/etc/app/app.conf",
	"/etc/app/conf.d/x.conf",
	"/etc/app/certs/tls.crt",
	"/var/lib/app/state",
	"/etc/NetworkManager/conf.d/99-custom.conf",
	"/etc/kubernetes/kubelet.conf",
	"/etc/crio/crio.conf.d/01-custom",
	"/etc/containers/storage.conf",
	"/etc/kubernetes/manifests/static.yaml",
}

var extraUnits = []string{"chronyd.service", "app.service", "iri-registry.service", "custom.timer", "kubelet.service", "crio.service", "logrotate.timer"}

func unitText(g *gen, name string) string {
	return fmt.Sprintf("[Unit]\nDescription=%s %d\n[Service]\nExecStart=/usr/bin/true\n[Install]\nWantedBy=multi-user.target\n", name, g.r.IntN(1000))
}

// mutation is one kind of change; classes group them.
type mutation func(g *gen)

func fileIn(g *gen, paths []string) { g.changeFile(pick(g.r, paths)) }

func existingFile(g *gen) string {
	fs := g.new.files()
	return fs[g.r.IntN(len(fs))].(obj)["path"].(string)
}

func existingUnit(g *gen) obj {
	us := g.new.units()
	return g.new.unit(us[g.r.IntN(len(us))].(obj)["name"].(string))
}

// classDef is a mutation class: the cases cycle through them, so each
// has len(cases)/len(classes) cases.
type classDef struct {
	name string
	mut  mutation
}

// classes is filled in init: some classes pick other classes.
var classes []classDef

func init() { classes = classList() }

func classList() []classDef {
	return []classDef{
		{"file-content", func(g *gen) {
			p := existingFile(g)
			g.new.putFile(p, append(contents(g.new.file(p)), g.text(p)...))
			g.say("change file %s", p)
		}},
		{"file-mode", func(g *gen) {
			p := existingFile(g)
			f := g.new.file(p)
			if g.r.IntN(4) == 0 {
				delete(f, "mode")
			} else {
				f["mode"] = json.Number(pick(g.r, []string{"384", "420", "493", "511", "256"}))
			}
			g.say("mode of %s", p)
		}},
		{"file-overwrite", func(g *gen) {
			p := existingFile(g)
			g.absentFalseOrTrue(g.new.file(p), "overwrite")
			g.say("overwrite of %s", p)
		}},
		{"file-remove", func(g *gen) {
			p := existingFile(g)
			g.new.removeFile(p)
			g.say("remove file %s", p)
		}},
		{"file-default-path", func(g *gen) { fileIn(g, defaultPaths) }},
		{"file-under-default-dir", func(g *gen) { fileIn(g, underDefaultDirs) }},
		{"file-near-miss", func(g *gen) { fileIn(g, nearMisses) }},
		{"file-arbitrary", func(g *gen) { fileIn(g, arbitraryPaths) }},
		{"unit-contents", func(g *gen) {
			u := existingUnit(g)
			if _, ok := u["contents"]; ok {
				u["contents"] = u["contents"].(string) + fmt.Sprintf("# generated %d\n", g.r.IntN(1000))
			} else {
				u["contents"] = unitText(g, u["name"].(string))
			}
			g.say("contents of unit %s", u["name"])
		}},
		{"unit-enabled", func(g *gen) {
			u := existingUnit(g)
			g.absentFalseOrTrue(u, "enabled")
			g.say("enabled of unit %s", u["name"])
		}},
		{"unit-mask", func(g *gen) {
			u := existingUnit(g)
			if m, _ := u["mask"].(bool); m {
				delete(u, "mask")
			} else {
				u["mask"] = true
			}
			g.say("mask of unit %s", u["name"])
		}},
		{"unit-dropin", func(g *gen) {
			u := existingUnit(g)
			ds := list(u, "dropins")
			switch {
			case len(ds) > 0 && g.r.IntN(3) == 0:
				u["dropins"] = slices.Delete(slices.Clone(ds), 0, 1)
				g.say("remove a dropin of unit %s", u["name"])
			case len(ds) > 0 && g.r.IntN(2) == 0:
				d := deepCopy(ds[0]).(obj)
				d["contents"] = fmt.Sprintf("[Service]\nEnvironment=X=%d\n", g.r.IntN(1000))
				u["dropins"] = append([]any{d}, ds[1:]...)
				g.say("change a dropin of unit %s", u["name"])
			default:
				u["dropins"] = append(slices.Clone(ds), obj{"name": fmt.Sprintf("99-gen-%d.conf", g.r.IntN(100)), "contents": "[Service]\nEnvironment=GEN=1\n"})
				g.say("add a dropin to unit %s", u["name"])
			}
		}},
		{"unit-add-remove", func(g *gen) {
			n := pick(g.r, append(extraUnits, "zincati.service", "kubelet-cleanup.service", "docker.socket"))
			if g.r.IntN(2) == 0 {
				g.old.removeUnit(n)
				g.new.removeUnit(n)
				g.new.setUnits(append(g.new.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
				g.say("add unit %s", n)
				return
			}
			if g.old.unit(n) == nil {
				u := obj{"name": n, "enabled": true, "contents": unitText(g, n)}
				g.old.setUnits(append(g.old.units(), u))
			}
			g.new.setUnits(slices.Clone(g.old.units()))
			g.new.removeUnit(n)
			g.say("remove unit %s", n)
		}},
		{"unit-iri-registry", func(g *gen) {
			n := "iri-registry.service"
			if g.r.IntN(2) == 0 {
				g.old.setUnits(append(g.old.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
			}
			g.new.removeUnit(n)
			if g.r.IntN(3) > 0 {
				g.new.setUnits(append(g.new.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
			}
			g.say("iri-registry.service")
		}},
		{"ssh-keys", func(g *gen) {
			c := g.new.core()
			keys := list(c, "sshAuthorizedKeys")
			if len(keys) > 0 && g.r.IntN(2) == 0 {
				c["sshAuthorizedKeys"] = slices.Delete(slices.Clone(keys), 0, 1)
				g.say("remove an SSH key")
			} else {
				c["sshAuthorizedKeys"] = append(slices.Clone(keys), fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGen%06d gen@example.com", g.r.IntN(1e6)))
				g.say("add an SSH key")
			}
		}},
		{"password-hash", func(g *gen) {
			c := g.new.core()
			if _, ok := c["passwordHash"]; ok && g.r.IntN(2) == 0 {
				delete(c, "passwordHash")
				g.say("remove the password hash")
			} else {
				c["passwordHash"] = fmt.Sprintf("$6$gen%d$hash", g.r.IntN(1000))
				g.say("set the password hash")
			}
		}},
		{"kernel-arguments", func(g *gen) {
			s := g.new.spec()
			ka := slices.Clone(list(s, "kernelArguments"))
			switch g.r.IntN(3) {
			case 0:
				ka = append(ka, pick(g.r, []string{"nosmt", "mitigations=off", "hugepagesz=1G", "systemd.unified_cgroup_hierarchy=1"}))
				g.say("add a kernel argument")
			case 1:
				if len(ka) > 0 {
					ka = slices.Delete(ka, len(ka)-1, len(ka))
				} else {
					g.old.spec()["kernelArguments"] = []any{"nosmt"}
				}
				g.say("remove a kernel argument")
			default:
				if len(ka) < 2 {
					ka = []any{"a=1", "b=2"}
					g.old.spec()["kernelArguments"] = []any{"b=2", "a=1"}
				} else {
					ka[0], ka[1] = ka[1], ka[0]
				}
				g.say("reorder kernel arguments")
			}
			s["kernelArguments"] = ka
		}},
		{"kernel-type", func(g *gen) {
			types := []string{"", "default", "realtime", "64k-pages"}
			if t := pick(g.r, types); t != "" {
				g.old.spec()["kernelType"] = t
			} else {
				delete(g.old.spec(), "kernelType")
			}
			if t := pick(g.r, types); t != "" {
				g.new.spec()["kernelType"] = t
			} else {
				delete(g.new.spec(), "kernelType")
			}
			g.say("kernelType %v → %v", g.old.spec()["kernelType"], g.new.spec()["kernelType"])
		}},
		{"extensions", func(g *gen) {
			exts := []string{"usbguard", "kerberos", "sysstat", "ipsec"}
			set := func(m mc) {
				var l []any
				for _, e := range exts {
					if g.r.IntN(3) == 0 {
						l = append(l, e)
					}
				}
				if l == nil && g.r.IntN(2) == 0 {
					delete(m.spec(), "extensions")
				} else {
					m.spec()["extensions"] = l
				}
			}
			set(g.old)
			set(g.new)
			g.say("extensions %v → %v", g.old.spec()["extensions"], g.new.spec()["extensions"])
		}},
		{"os-image", func(g *gen) {
			g.new.spec()["osImageURL"] = fmt.Sprintf("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%064x", g.r.Uint64())
			g.say("osImageURL")
		}},
		{"registries-additions", func(g *gen) { registriesCase(g, safeRegistryEdits) }},
		{"registries-removals", func(g *gen) { registriesCase(g, unsafeRegistryEdits) }},
		{"registries-mixed", func(g *gen) {
			registriesCase(g, slices.Concat(safeRegistryEdits, unsafeRegistryEdits))
		}},
		{"refused", func(g *gen) { pick(g.r, refusedEdits)(g) }},
		{"combination", combination},
		{"combination", combination}, // twice the weight
		{"policy", policyClass},
		{"policy", policyClass}, // twice the weight
		{"identity", func(g *gen) {
			if g.r.IntN(2) == 0 {
				// Only the order of the files changes: no changed path
				// for the MCO, but its files flag is set (DeepEqual).
				fs := slices.Clone(g.new.files())
				if len(fs) > 1 {
					fs[0], fs[1] = fs[1], fs[0]
				}
				g.new.setFiles(fs)
				g.say("swap the first two files")
			} else {
				g.say("no change")
			}
		}},
		{"real-pair", nil}, // built by realPair
	}
}

// policyClass: a random MachineConfiguration of the pool and one to three
// changes its entries may decide.
func policyClass(g *gen) {
	g.policy = policyPool[g.r.IntN(len(policyPool))]
	n := 1 + g.r.IntN(3)
	for range n {
		policyTarget(g)
	}
}

// combination: two to four mutations of other classes.
func combination(g *gen) {
	n := 2 + g.r.IntN(3)
	for range n {
		c := classes[g.r.IntN(len(classes))]
		switch c.name {
		case "combination", "real-pair", "policy", "identity":
			c = classes[0]
		}
		c.mut(g)
	}
}

// refusedEdits are changes the MCO's reconcilability check refuses (or,
// for a removed link, accepts).
var refusedEdits = []mutation{
	func(g *gen) { g.new.spec()["fips"] = true; g.say("fips") },
	func(g *gen) {
		g.new.setStorageList("directories", append(g.new.storageList("directories"), obj{"path": "/etc/gen-dir", "mode": json.Number("493")}))
		g.say("new directory")
	},
	func(g *gen) {
		g.new.setStorageList("links", append(g.new.storageList("links"), obj{"path": "/etc/gen-link", "target": "/etc/motd"}))
		g.say("new link")
	},
	func(g *gen) {
		g.old.setStorageList("links", []any{obj{"path": "/etc/gen-link", "target": "/etc/motd"}})
		g.say("link removed")
	},
	func(g *gen) {
		child(g.new.ign(), "passwd")["users"] = append(slices.Clone(g.new.users()), obj{"name": "gen", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAAgen"}})
		g.say("new non-core user")
	},
	func(g *gen) {
		g.new.setStorageList("disks", append(g.new.storageList("disks"), obj{"device": "/dev/vdz", "wipeTable": true}))
		g.say("disks")
	},
	func(g *gen) {
		g.new.setStorageList("filesystems", append(g.new.storageList("filesystems"), obj{"device": "/dev/vdz1", "format": "xfs", "path": "/var/gen"}))
		g.say("filesystems")
	},
	func(g *gen) {
		g.new.setStorageList("raid", append(g.new.storageList("raid"), obj{"name": "md-gen", "level": "raid1", "devices": []any{"/dev/vdx", "/dev/vdy"}}))
		g.say("raid")
	},
	func(g *gen) {
		f := newFile("/etc/gen-append.conf", []byte("a\n"))
		f["append"] = []any{obj{"source": genDataURL([]byte("b\n"))}}
		g.new.setFiles(append(g.new.files(), f))
		g.say("appended file")
	},
	func(g *gen) {
		g.new.setFiles(append(g.new.files(), newFile("/run/machine-config-daemon-force", nil)))
		g.say("the force file")
	},
	func(g *gen) {
		child(g.new.ign(), "kernelArguments")["shouldExist"] = []any{"nosmt"}
		g.say("Ignition kernelArguments")
	},
	func(g *gen) {
		p := existingFile(g)
		g.new.file(p)["mode"] = json.Number("2541") // 04755
		g.say("setuid mode on %s", p)
	},
	func(g *gen) {
		c := g.new.core()
		delete(c, "sshAuthorizedKeys")
		delete(c, "passwordHash")
		g.say("core without keys or password")
	},
}

// registries.conf, as a model the generator edits and writes as TOML.

type mirror struct {
	Location       string
	Insecure       bool
	PullFromMirror string
}

type registry struct {
	Prefix, Location            string
	Insecure, Blocked, ByDigest bool
	Mirrors                     []mirror
}

type registriesConf struct {
	Search     []string
	Registries []registry
	Comment    string
}

func (c registriesConf) clone() registriesConf {
	n := c
	n.Search = slices.Clone(c.Search)
	n.Registries = make([]registry, len(c.Registries))
	for i, r := range c.Registries {
		r.Mirrors = slices.Clone(r.Mirrors)
		n.Registries[i] = r
	}
	return n
}

func (c registriesConf) render() []byte {
	var b strings.Builder
	if c.Comment != "" {
		fmt.Fprintf(&b, "# %s\n", c.Comment)
	}
	if c.Search != nil {
		q := make([]string, len(c.Search))
		for i, s := range c.Search {
			q[i] = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&b, "unqualified-search-registries = [%s]\n", strings.Join(q, ", "))
	}
	b.WriteString("short-name-mode = \"\"\n")
	for _, r := range c.Registries {
		fmt.Fprintf(&b, "\n[[registry]]\n  prefix = %q\n  location = %q\n", r.Prefix, r.Location)
		if r.ByDigest {
			b.WriteString("  mirror-by-digest-only = true\n")
		}
		if r.Blocked {
			b.WriteString("  blocked = true\n")
		}
		if r.Insecure {
			b.WriteString("  insecure = true\n")
		}
		for _, m := range r.Mirrors {
			fmt.Fprintf(&b, "\n  [[registry.mirror]]\n    location = %q\n", m.Location)
			if m.PullFromMirror != "" {
				fmt.Fprintf(&b, "    pull-from-mirror = %q\n", m.PullFromMirror)
			}
			if m.Insecure {
				b.WriteString("    insecure = true\n")
			}
		}
	}
	return []byte(b.String())
}

var (
	sources     = []string{"quay.io/openshift-release-dev/ocp-release", "quay.io/openshift-release-dev/ocp-v4.0-art-dev", "registry.redhat.io/ubi9", "docker.io/library", "example.com/team/app"}
	mirrorHosts = []string{"mirror.example.com:5000", "registry.internal", "cache.local/quay", "m1.example.net", "m2.example.net/ns"}
)

func randomMirror(g *gen, src string, pullFrom string) mirror {
	return mirror{Location: pick(g.r, mirrorHosts) + "/" + path.Base(src) + fmt.Sprintf("-%d", g.r.IntN(4)), PullFromMirror: pullFrom}
}

func randomRegistries(g *gen) registriesConf {
	c := registriesConf{}
	if g.r.IntN(5) > 0 {
		c.Search = []string{"registry.access.redhat.com", "docker.io"}
		if g.r.IntN(3) == 0 {
			c.Search = append(c.Search, "quay.io")
		}
	}
	srcs := slices.Clone(sources)
	g.r.Shuffle(len(srcs), func(i, j int) { srcs[i], srcs[j] = srcs[j], srcs[i] })
	for _, s := range srcs[:g.r.IntN(4)] {
		r := registry{Location: s}
		if g.r.IntN(4) == 0 {
			r.Prefix = s
		}
		if g.r.IntN(5) == 0 {
			r.ByDigest = true
		}
		for range 1 + g.r.IntN(2) {
			pf := "digest-only"
			if r.ByDigest {
				pf = ""
			} else if g.r.IntN(4) == 0 {
				pf = pick(g.r, []string{"", "all", "tag-only"})
			}
			r.Mirrors = append(r.Mirrors, randomMirror(g, s, pf))
		}
		c.Registries = append(c.Registries, r)
	}
	return c
}

type registryEdit func(g *gen, c *registriesConf) bool

func someRegistry(g *gen, c *registriesConf) *registry {
	if len(c.Registries) == 0 {
		return nil
	}
	return &c.Registries[g.r.IntN(len(c.Registries))]
}

var safeRegistryEdits = []registryEdit{
	func(g *gen, c *registriesConf) bool { // digest-only mirror added
		r := someRegistry(g, c)
		if r == nil {
			return false
		}
		r.Mirrors = append(r.Mirrors, randomMirror(g, r.Location, "digest-only"))
		g.say("registries: digest-only mirror added to %s", r.Location)
		return true
	},
	func(g *gen, c *registriesConf) bool { // comment only
		c.Comment = fmt.Sprintf("generated comment %d", g.r.IntN(1000))
		g.say("registries: comment")
		return true
	},
	func(g *gen, c *registriesConf) bool { // search registry appended
		c.Search = append(c.Search, "gen.example.com")
		g.say("registries: search registry appended")
		return true
	},
	func(g *gen, c *registriesConf) bool { // a new registry with digest-only mirrors
		s := fmt.Sprintf("new.example.com/ns%d", g.r.IntN(100))
		c.Registries = append(c.Registries, registry{Location: s, Mirrors: []mirror{randomMirror(g, s, "digest-only")}})
		g.say("registries: new registry, digest-only mirror")
		return true
	},
	func(g *gen, c *registriesConf) bool { // mirror added to a mirror-by-digest-only registry
		s := "digest.example.com/only"
		c.Registries = append(c.Registries, registry{Location: s, ByDigest: true, Mirrors: []mirror{randomMirror(g, s, "")}})
		g.say("registries: new mirror-by-digest-only registry")
		return true
	},
	func(g *gen, c *registriesConf) bool { // pull-from-mirror changed to digest-only
		r := someRegistry(g, c)
		if r == nil || len(r.Mirrors) == 0 {
			return false
		}
		r.Mirrors[0].PullFromMirror = "digest-only"
		g.say("registries: pull-from-mirror → digest-only on %s", r.Location)
		return true
	},
}

var unsafeRegistryEdits = []registryEdit{
	func(g *gen, c *registriesConf) bool { // mirror added without digest-only
		r := someRegistry(g, c)
		if r == nil {
			return false
		}
		r.Mirrors = append(r.Mirrors, randomMirror(g, r.Location, pick(g.r, []string{"", "all", "tag-only"})))
		g.say("registries: mirror without digest-only added to %s", r.Location)
		return true
	},
	func(g *gen, c *registriesConf) bool { // mirror removed
		r := someRegistry(g, c)
		if r == nil || len(r.Mirrors) == 0 {
			return false
		}
		r.Mirrors = r.Mirrors[1:]
		g.say("registries: mirror removed from %s", r.Location)
		return true
	},
	func(g *gen, c *registriesConf) bool { // registry removed
		if len(c.Registries) == 0 {
			return false
		}
		i := g.r.IntN(len(c.Registries))
		g.say("registries: registry %s removed", c.Registries[i].Location)
		c.Registries = slices.Delete(c.Registries, i, i+1)
		return true
	},
	func(g *gen, c *registriesConf) bool { // prefix, location, blocked or insecure changed
		r := someRegistry(g, c)
		if r == nil {
			return false
		}
		switch g.r.IntN(4) {
		case 0:
			r.Prefix = r.Location + "/sub"
			g.say("registries: prefix of %s", r.Location)
		case 1:
			r.Location += "-moved"
			g.say("registries: location of %s", r.Location)
		case 2:
			r.Blocked = !r.Blocked
			g.say("registries: blocked of %s", r.Location)
		default:
			r.Insecure = !r.Insecure
			g.say("registries: insecure of %s", r.Location)
		}
		return true
	},
	func(g *gen, c *registriesConf) bool { // pull-from-mirror changed to other than digest-only
		r := someRegistry(g, c)
		if r == nil || len(r.Mirrors) == 0 {
			return false
		}
		r.Mirrors[0].PullFromMirror = pick(g.r, []string{"", "all", "tag-only"})
		g.say("registries: pull-from-mirror of a mirror of %s", r.Location)
		return true
	},
	func(g *gen, c *registriesConf) bool { // search registries removed or reordered
		if len(c.Search) < 2 {
			return false
		}
		if g.r.IntN(2) == 0 {
			c.Search = c.Search[1:]
			g.say("registries: search registry removed")
		} else {
			c.Search[0], c.Search[1] = c.Search[1], c.Search[0]
			g.say("registries: search registries reordered")
		}
		return true
	},
	func(g *gen, c *registriesConf) bool { // a new registry with tag mirrors (an ITMS)
		s := fmt.Sprintf("tags.example.com/ns%d", g.r.IntN(100))
		c.Registries = append(c.Registries, registry{Location: s, Mirrors: []mirror{randomMirror(g, s, "tag-only")}})
		g.say("registries: new registry with tag mirrors")
		return true
	},
}

// registriesCase writes a random registries.conf into OLD and an edited
// one into NEW.
func registriesCase(g *gen, edits []registryEdit) {
	const p = "/etc/containers/registries.conf"
	old := randomRegistries(g)
	n := old.clone()
	for tries := 0; ; tries++ {
		if pick(g.r, edits)(g, &n) || tries > 20 {
			break
		}
	}
	if g.r.IntN(4) == 0 { // sometimes a second edit
		pick(g.r, edits)(g, &n)
	}
	g.old.putFile(p, old.render())
	g.new.putFile(p, n.render())
}

// MachineConfiguration policies.

type policyCfg struct {
	Files []policyEntry `json:"files,omitempty"`
	Units []policyEntry `json:"units,omitempty"`
	SSH   []obj         `json:"-"`
}

type policyEntry struct {
	Key     string // path or unit name
	Actions []obj
}

var policyPaths = []string{
	"/etc", "/etc/", "/", "/etc/containers", "/etc/containers/", "/etc/containers/policy.json",
	"/etc/containers/registries.conf", "/etc/containers/registries.d", "/etc/containers/registries.d/",
	"/etc/containers/registries.d/quay.io.yaml", "/etc/crio", "/etc/crio/policies", "/etc/crio/policies/",
	"/etc/kubernetes", "/etc/kubernetes/credential-providers", "/etc/kubernetes/credential-providers/a",
	"/var/lib/kubelet/config.json", "/var/lib/kubelet", "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
	"/etc/pki/ca-trust/source/anchors", "/etc/app", "/etc/app/", "/etc/app/conf.d", "/etc/app/conf.d/x.conf",
	"/etc/app/certs/", "/etc/chrony.conf", "/etc/sysctl.d", "/usr/local/bin", "/usr/local/bin/",
	"/etc/NetworkManager/dispatcher.d", "/etc/systemd/system", "/etc/systemd/system/kubelet.service.d/",
	"/etc/crio/crio.conf.d/00-default", "/etc/iri-registry", "/etc/nmstate/openshift", "/etc/nmstate",
	"/etc/mco/internal-registry-pull-secret.json", "/etc/kubernetes/kubelet.conf", "/etc/motd",
}

var policyUnits = []string{
	"kubelet.service", "crio.service", "chronyd.service", "app.service", "iri-registry.service", "zincati.service",
	"kubelet-cleanup.service", "docker.socket", "custom.timer", "logrotate.timer", "machine-config-daemon-pull.service",
	"ovs-configuration.service", "openshift-azure-routes.path",
}

var services = []string{"crio.service", "kubelet.service", "chronyd.service", "app.service", "NetworkManager.service",
	"iri-registry.service", "foo-bar_baz:1.socket", "rotate.timer", "coreos-update-ca-trust.service"}

// randomActions is an action list the API accepts: Reboot or None alone,
// at most 10 entries, Reload and Restart with a valid service name.
func randomActions(r *rand.Rand) []obj {
	switch r.IntN(6) {
	case 0:
		return []obj{{"type": "Reboot"}}
	case 1:
		return []obj{{"type": "None"}}
	}
	n := 1 + r.IntN(4)
	if r.IntN(20) == 0 {
		n = 10
	}
	var l []obj
	for range n {
		switch r.IntN(4) {
		case 0:
			l = append(l, obj{"type": "Drain"})
		case 1:
			l = append(l, obj{"type": "DaemonReload"})
		case 2:
			l = append(l, obj{"type": "Reload", "reload": obj{"serviceName": pick(r, services)}})
		default:
			l = append(l, obj{"type": "Restart", "restart": obj{"serviceName": pick(r, services)}})
		}
	}
	return l
}

func randomPolicy(r *rand.Rand) *policyCfg {
	p := &policyCfg{}
	paths := slices.Clone(policyPaths)
	r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	for _, k := range paths[:1+r.IntN(8)] {
		p.Files = append(p.Files, policyEntry{Key: k, Actions: randomActions(r)})
	}
	units := slices.Clone(policyUnits)
	r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	for _, k := range units[:r.IntN(5)] {
		p.Units = append(p.Units, policyEntry{Key: k, Actions: randomActions(r)})
	}
	if r.IntN(2) == 0 {
		p.SSH = randomActions(r)
	}
	return p
}

// policyPool: 64 MachineConfigurations the cases share (each compiles
// once for the "before" planner).
var policyPool = func() []*policyCfg {
	var l []*policyCfg
	for i := range 64 {
		l = append(l, randomPolicy(rand.New(rand.NewPCG(generatorSeed, 1<<40+uint64(i)))))
	}
	return l
}()

// document is the MachineConfiguration "cluster", as JSON (which is YAML).
func (p *policyCfg) document() []byte {
	ndp := obj{}
	entries := func(es []policyEntry, key string) []any {
		var l []any
		for _, e := range es {
			acts := make([]any, len(e.Actions))
			for i, a := range e.Actions {
				acts[i] = a
			}
			l = append(l, obj{key: e.Key, "actions": acts})
		}
		return l
	}
	if len(p.Files) > 0 {
		ndp["files"] = entries(p.Files, "path")
	}
	if len(p.Units) > 0 {
		ndp["units"] = entries(p.Units, "name")
	}
	if len(p.SSH) > 0 {
		acts := make([]any, len(p.SSH))
		for i, a := range p.SSH {
			acts[i] = a
		}
		ndp["sshkey"] = obj{"actions": acts}
	}
	doc := obj{"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": obj{"name": "cluster"}, "spec": obj{"nodeDisruptionPolicy": ndp}}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// policyTarget changes something one of the case's policy entries may
// decide: the entry's path, a path beneath it, a near miss, or its unit.
func policyTarget(g *gen) {
	p := g.policy
	if len(p.Units) > 0 && g.r.IntN(4) == 0 {
		n := pick(g.r, p.Units).Key
		if g.old.unit(n) == nil {
			g.old.setUnits(append(g.old.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
		}
		if g.new.unit(n) == nil {
			g.new.setUnits(append(g.new.units(), obj{"name": n, "enabled": true, "contents": unitText(g, n)}))
		} else {
			g.new.unit(n)["contents"] = unitText(g, n)
		}
		g.say("unit %s", n)
		return
	}
	if len(p.SSH) > 0 && g.r.IntN(6) == 0 {
		classByName("ssh-keys").mut(g)
		return
	}
	e := pick(g.r, p.Files).Key
	clean := path.Clean(e)
	target := nearPath(g, clean)
	if target == "/" || target == "/etc" || target == "/etc/containers/registries.conf" {
		target = path.Join(clean, "gen.conf")
		if clean == "/etc/containers/registries.conf" {
			registriesCase(g, slices.Concat(safeRegistryEdits, unsafeRegistryEdits))
			return
		}
	}
	g.changeFile(target)
}

func classByName(n string) classDef {
	for _, c := range classes {
		if c.name == n {
			return c
		}
	}
	panic("no class " + n)
}

// agreementCase is one generated question for both sides.
type agreementCase struct {
	Index        int
	Class        string
	Base         string
	Desc         []string
	Old, New, MC []byte // MC nil: no MachineConfiguration (the defaults)
}

// Digest of the exact bytes given to mco-decide (OLD, NEW, the
// MachineConfiguration), 128 bits in hex.
func (c *agreementCase) Digest() string {
	h := newDigest()
	for _, b := range [][]byte{c.Old, c.New, c.MC} {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:16])
}

// realPairs are the ordered pairs of different rendered configs of one
// pool of one cluster: real OLD/NEW updates.
func realPairs(bs []*base) [][2]*base {
	var l [][2]*base
	for _, a := range bs {
		for _, b := range bs {
			if a != b && a.Cluster == b.Cluster && a.Pool == b.Pool {
				l = append(l, [2]*base{a, b})
			}
		}
	}
	return l
}

func marshalMC(m mc) []byte {
	b, err := json.Marshal(m.o)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// generateCase builds case i; classOverride (>=0) forces the class and
// extra (fuzz input) adds mutations.
func generateCase(i int, bs []*base, forceClass int, extra []uint8) *agreementCase {
	r := rand.New(rand.NewPCG(generatorSeed, uint64(i)))
	ci := i % len(classes)
	if forceClass >= 0 {
		ci = forceClass % len(classes)
	}
	cl := classes[ci]
	c := &agreementCase{Index: i, Class: cl.name}
	var ob, nb *base
	if cl.name == "real-pair" {
		pairs := realPairs(bs)
		pr := pairs[r.IntN(len(pairs))]
		ob, nb = pr[0], pr[1]
	} else {
		ob = bs[r.IntN(len(bs))]
		nb = ob
	}
	g, bases := newGen(r, ob, nb, "gen", i)
	c.Base = bases
	if cl.mut != nil {
		cl.mut(g)
	}
	for _, x := range extra {
		if m := classes[int(x)%len(classes)].mut; m != nil {
			m(g)
		}
	}
	// A policy on a quarter of the other cases too.
	if g.policy == nil && r.IntN(4) == 0 {
		g.policy = policyPool[r.IntN(len(policyPool))]
	}
	c.Desc = g.desc
	c.Old, c.New = marshalMC(g.old), marshalMC(g.new)
	if g.policy != nil {
		c.MC = g.policy.document()
	}
	return c
}

// nearPath is a path at, beneath or beside clean (a policy entry's path):
// itself, a file in it, one deeper, or a sibling whose name only starts
// like it, where a path match goes wrong first.
func nearPath(g *gen, clean string) string {
	switch g.r.IntN(5) {
	case 0, 1:
		return clean
	case 2:
		return path.Join(clean, "gen.conf")
	case 3:
		return path.Join(clean, "a", "b.conf")
	}
	return clean + pick(g.r, []string{"x", "2", ".bak", "-other"})
}
