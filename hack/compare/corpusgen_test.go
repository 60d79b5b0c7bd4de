package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/nodeconfig"
)

// The corpus pairs of KubeletConfig and ContainerRuntimeConfig changes are
// not written by hand: their kubelet.conf, kubelet.service drop-in,
// node-sizing file, CRI-O drop-ins and storage.conf are what ndp's
// nodeconfig package (the KubeletConfig and ContainerRuntimeConfig
// controllers' renderer) writes for the config before and after the
// change, merged over the pool's base, the rendered config of
// 01-pull-secret/old.yaml. TestGeneratedCorpus fails when a committed pair
// is not what the generator writes;
//
//	go test ./hack/compare -run TestGeneratedCorpus -update
//
// rewrites them.
var update = flag.Bool("update", false, "rewrite the generated corpus pairs (examples/corpus) instead of checking them")

// generatedBase is the rendered config every generated pair starts from.
const generatedBase = "01-pull-secret/old.yaml"

// The MachineConfigs the generated files come from, as the render
// controller names them in ndp.dev/sources.
const (
	kubeletSource          = "99-worker-generated-kubelet"
	containerRuntimeSource = "99-worker-generated-containerruntime"
	storageTemplateSource  = "01-worker-container-runtime"
)

// templateStorageConf is the MCO template's /etc/containers/storage.conf
// (templates/common/_base/files/container-storage.yaml, comments
// shortened), which a ContainerRuntimeConfig's overlaySize is merged into.
const templateStorageConf = `# This file is the configuration file for all tools
# that use the containers/storage library.
# See man 5 containers-storage.conf for more information.
[storage]

# Default Storage Driver
driver = "overlay"

# Temporary storage location
runroot = "/var/run/containers/storage"

# Primary Read/Write location of container storage
graphroot = "/var/lib/containers/storage"

[storage.options]
# AdditionalImageStores is used to pass paths to additional Read/Only image stores
additionalimagestores = [
]

# Size is used to set a maximum size of the container image.
size = ""

[storage.options.overlay]
# Do not create a PRIVATE bind mount on the home directory.
skip_mount_home = "true"
`

// genState is what the pool's generated configs are on one side of a
// change: a KubeletConfig and a ContainerRuntimeConfig (their spec as
// YAML, "" for none), and whether the pool has the template's storage.conf.
type genState struct {
	kubelet, crio string
	storageConf   bool
}

// genPair is one generated change of the corpus.
type genPair struct {
	dir, title string
	// about says, in a sentence or two, what the administrator did and
	// what the controller writes; the header of both files.
	about    string
	old, new genState
}

// tuning is the KubeletConfig the pool has before most kubelet changes: an
// existing one, edited by the change (so both sides are rendered by the
// same code, and only the setting edited differs).
const tuning = "kubeletConfig:\n  maxPods: 250\n"

var genPairs = []genPair{
	{dir: "05-kubelet-max-pods", title: "KubeletConfig: maxPods 250 -> 500",
		about: "The pool's KubeletConfig raises maxPods; the kubelet config controller re-renders\n/etc/kubernetes/kubelet.conf (99-worker-generated-kubelet).",
		old:   genState{kubelet: tuning}, new: genState{kubelet: "kubeletConfig:\n  maxPods: 500\n"}},
	{dir: "27-crio-log-level", title: "ContainerRuntimeConfig: CRI-O log level debug (/etc/crio/crio.conf.d/)",
		about: "A ContainerRuntimeConfig sets logLevel: debug while a pull problem is investigated; rendered\nas the drop-in /etc/crio/crio.conf.d/01-ctrcfg-logLevel.",
		new:   genState{crio: "containerRuntimeConfig:\n  logLevel: debug\n"}},
	{dir: "40-kubelet-eviction-hard", title: "KubeletConfig: evictionHard memory.available 100Mi -> 500Mi, nodefs 10% -> 15%",
		about: "The pool's KubeletConfig raises the hard eviction thresholds (merged key by key over the\nbase's evictionHard) in /etc/kubernetes/kubelet.conf.",
		old:   genState{kubelet: tuning},
		new:   genState{kubelet: tuning + "  evictionHard:\n    memory.available: 500Mi\n    nodefs.available: 15%\n"}},
	{dir: "41-kubelet-api-qps", title: "KubeletConfig: kubeAPIQPS 50 -> 100, kubeAPIBurst 100 -> 200",
		about: "The pool's KubeletConfig raises the kubelet's API client rate limits in\n/etc/kubernetes/kubelet.conf.",
		old:   genState{kubelet: tuning},
		new:   genState{kubelet: tuning + "  kubeAPIQPS: 100\n  kubeAPIBurst: 200\n"}},
	{dir: "42-kubelet-pod-pids-limit", title: "KubeletConfig: podPidsLimit 4096 -> 8192",
		about: "The pool's KubeletConfig raises the per-pod PID limit in /etc/kubernetes/kubelet.conf.",
		old:   genState{kubelet: tuning},
		new:   genState{kubelet: tuning + "  podPidsLimit: 8192\n"}},
	{dir: "43-kubelet-log-level", title: "KubeletConfig: logLevel 4 (kubelet.service.d/20-logging.conf)",
		about: "The pool's KubeletConfig sets logLevel: 4 to debug the kubelet; rendered as the drop-in\n/etc/systemd/system/kubelet.service.d/20-logging.conf (KUBELET_LOG_LEVEL), kubelet.conf unchanged.",
		old:   genState{kubelet: tuning},
		new:   genState{kubelet: "logLevel: 4\n" + tuning}},
	{dir: "44-kubelet-cpu-manager-static", title: "KubeletConfig: cpuManagerPolicy static, reservedSystemCPUs 0-1",
		about: "The pool's KubeletConfig turns on the static CPU manager with CPUs 0-1 reserved for the\nsystem (which also clears systemReservedCgroup and enforces allocatable on pods only).",
		old:   genState{kubelet: tuning},
		new:   genState{kubelet: tuning + "  cpuManagerPolicy: static\n  cpuManagerReconcilePeriod: 5s\n  reservedSystemCPUs: 0-1\n"}},
	{dir: "45-kubelet-topology-manager", title: "KubeletConfig: topologyManagerPolicy single-numa-node",
		about: "On a pool already running the static CPU manager, the KubeletConfig sets the topology\nmanager's policy to single-numa-node.",
		old:   genState{kubelet: tuning + "  cpuManagerPolicy: static\n  cpuManagerReconcilePeriod: 5s\n  reservedSystemCPUs: 0-1\n"},
		new:   genState{kubelet: tuning + "  cpuManagerPolicy: static\n  cpuManagerReconcilePeriod: 5s\n  reservedSystemCPUs: 0-1\n  topologyManagerPolicy: single-numa-node\n"}},
	{dir: "46-kubelet-system-reserved", title: "KubeletConfig: systemReserved memory 1Gi -> 3Gi, cpu 500m -> 1",
		about: "The pool's KubeletConfig reserves more memory and CPU for the system; the controller writes\nthem to /etc/node-sizing-enabled.env (read by kubelet-auto-node-size.service), not to kubelet.conf.",
		old:   genState{kubelet: tuning + "  systemReserved:\n    memory: 1Gi\n    cpu: 500m\n"},
		new:   genState{kubelet: tuning + "  systemReserved:\n    memory: 3Gi\n    cpu: \"1\"\n"}},
	{dir: "47-crio-pids-limit", title: "ContainerRuntimeConfig: pidsLimit 4096 -> 8192",
		about: "The pool's ContainerRuntimeConfig raises CRI-O's per-container PID limit\n(/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit).",
		old:   genState{crio: "containerRuntimeConfig:\n  pidsLimit: 4096\n"},
		new:   genState{crio: "containerRuntimeConfig:\n  pidsLimit: 8192\n"}},
	{dir: "48-crio-log-size-max", title: "ContainerRuntimeConfig: logSizeMax 50Mi",
		about: "A ContainerRuntimeConfig caps container log files at 50Mi\n(/etc/crio/crio.conf.d/01-ctrcfg-logSizeMax added).",
		new:   genState{crio: "containerRuntimeConfig:\n  logSizeMax: 50Mi\n"}},
	{dir: "49-crio-overlay-size", title: "ContainerRuntimeConfig: overlaySize 20G (/etc/containers/storage.conf)",
		about: "A ContainerRuntimeConfig limits each container's writable layer to 20G; the controller\nwrites the pool's /etc/containers/storage.conf with options.size set (99-worker-generated-containerruntime).",
		old:   genState{storageConf: true},
		new:   genState{storageConf: true, crio: "containerRuntimeConfig:\n  overlaySize: 20G\n"}},
}

// genFile is a file of a generated config and the MachineConfig it comes from.
type genFile struct {
	nodeconfig.File
	source string
}

// files are the files the pool's generated configs write in state s, with
// the MachineConfig each comes from; kubeletConf is the base kubelet.conf
// a KubeletConfig is merged into.
func (s genState) files(kubeletConf []byte) ([]genFile, error) {
	var out []genFile
	if s.storageConf {
		out = append(out, genFile{nodeconfig.File{Path: nodeconfig.StorageConfPath, Data: []byte(templateStorageConf)}, storageTemplateSource})
	}
	if s.kubelet != "" {
		var kc mcfgv1.KubeletConfig
		kc.Name = "worker-tuning"
		if err := yaml.UnmarshalStrict([]byte(s.kubelet), &kc.Spec); err != nil {
			return nil, err
		}
		if err := nodeconfig.ValidateKubeletConfig(&kc); err != nil {
			return nil, err
		}
		files, err := nodeconfig.KubeletFiles(&kc, kubeletConf, "the pool's MachineConfig \"01-worker-kubelet\"")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, genFile{f, kubeletSource})
		}
	}
	if s.crio != "" {
		var c mcfgv1.ContainerRuntimeConfig
		c.Name = "worker-crio"
		if err := yaml.UnmarshalStrict([]byte(s.crio), &c.Spec); err != nil {
			return nil, err
		}
		if err := nodeconfig.ValidateContainerRuntimeConfig(&c); err != nil {
			return nil, err
		}
		files, err := nodeconfig.ContainerRuntimeFiles(&c, []byte(templateStorageConf), "the pool's MachineConfig \""+storageTemplateSource+"\"")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, genFile{f, containerRuntimeSource})
		}
	}
	return out, nil
}

// percentEncode writes contents as the corpus's data URLs do: every byte
// but ASCII letters, digits and -_.~ percent-encoded.
func percentEncode(data []byte) string {
	var b strings.Builder
	for _, c := range data {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

var (
	headerRE  = regexp.MustCompile(`(?s)\A(#[^\n]*\n)+`)
	nameRE    = regexp.MustCompile(`(?m)^  name: rendered-worker-[0-9a-f]+$`)
	sourcesRE = regexp.MustCompile(`(?s)(    ndp\.dev/sources: \|\n)(      [^\n]*\n)+`)
	filesRE   = regexp.MustCompile(`(?s)(    storage:\n      files:\n)(.*?)(\n    systemd:\n)`)
)

// renderPair writes the YAML of one side of p over the base text.
func renderPair(baseText string, kubeletConf []byte, p genPair, after bool) (string, error) {
	state, side := p.old, "before"
	if after {
		state, side = p.new, "after"
	}
	files, err := state.files(kubeletConf)
	if err != nil {
		return "", fmt.Errorf("%s (%s): %w", p.dir, side, err)
	}
	text := baseText

	// Files: the base's entries by path, generated ones replacing or added,
	// sorted by path as the render controller writes them.
	m := filesRE.FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("%s: no storage.files in the base", generatedBase)
	}
	entries := map[string]string{}
	for _, e := range strings.Split("\n"+m[2], "\n      - path: ")[1:] {
		path, _, _ := strings.Cut(e, "\n")
		entries[path] = "      - path: " + e
	}
	var sources map[string]string
	sm := sourcesRE.FindStringSubmatch(text)
	if sm == nil {
		return "", fmt.Errorf("%s: no ndp.dev/sources annotation", generatedBase)
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(sm[0], sm[1])), &sources); err != nil {
		return "", fmt.Errorf("%s: ndp.dev/sources: %w", generatedBase, err)
	}
	for _, f := range files {
		entries[f.Path] = fmt.Sprintf("      - path: %s\n        mode: 420\n        overwrite: true\n        contents:\n          source: data:,%s", f.Path, percentEncode(f.Data))
		sources["file:"+f.Path] = f.source
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var list []string
	for _, p := range paths {
		list = append(list, entries[p])
	}
	text = strings.Replace(text, m[0], m[1]+strings.Join(list, "\n")+m[3], 1)

	js, err := json.MarshalIndent(sources, "      ", "  ")
	if err != nil {
		return "", err
	}
	text = strings.Replace(text, sm[0], sm[1]+"      "+string(js)+"\n", 1)

	// The name changes with the content, as a rendered config's does.
	sum := md5.Sum([]byte(nameRE.ReplaceAllString(headerRE.ReplaceAllString(text, ""), "")))
	text = nameRE.ReplaceAllString(text, "  name: rendered-worker-"+hex.EncodeToString(sum[:]))

	header := fmt.Sprintf("# Corpus %s: %s\n", p.dir, p.title)
	for _, l := range strings.Split(p.about, "\n") {
		header += "# " + l + "\n"
	}
	header += "# Generated by hack/compare/corpusgen_test.go from the KubeletConfig and ContainerRuntimeConfig\n" +
		"# there, with ndp's nodeconfig package; do not edit: go test ./hack/compare -run TestGeneratedCorpus -update\n"
	header += fmt.Sprintf("# This file: the rendered config %s the change.\n", side)
	return headerRE.ReplaceAllString(text, header), nil
}

// TestGeneratedCorpus: the KubeletConfig and ContainerRuntimeConfig pairs
// of the corpus are what ndp's nodeconfig package writes (with -update:
// write them).
func TestGeneratedCorpus(t *testing.T) {
	dir := filepath.Dir(corpusManifest)
	baseBytes, err := os.ReadFile(filepath.Join(dir, generatedBase))
	if err != nil {
		t.Fatal(err)
	}
	base, err := machineconfig.Parse(generatedBase, baseBytes)
	if err != nil {
		t.Fatal(err)
	}
	var kubeletConf []byte
	for i := range base.Ignition.Storage.Files {
		if f := &base.Ignition.Storage.Files[i]; f.Path == nodeconfig.KubeletConfPath {
			if kubeletConf, err = machineconfig.FileContents(base, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kubeletConf == nil {
		t.Fatalf("%s has no %s", generatedBase, nodeconfig.KubeletConfPath)
	}
	m, err := LoadManifest(corpusManifest)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range m.Changes {
		listed[e.Dir] = true
	}
	for _, p := range genPairs {
		if !listed[p.dir] {
			t.Errorf("generated pair %s is not listed in %s", p.dir, DefaultManifest)
		}
		for _, after := range []bool{false, true} {
			want, err := renderPair(string(baseBytes), kubeletConf, p, after)
			if err != nil {
				t.Fatal(err)
			}
			name := "old.yaml"
			if after {
				name = "new.yaml"
			}
			path := filepath.Join(dir, p.dir, name)
			if _, err := machineconfig.Parse(path, []byte(want)); err != nil {
				t.Fatalf("generated %s does not parse: %v", path, err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%v (go test ./hack/compare -run TestGeneratedCorpus -update writes it)", err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s is not what the generator writes (go test ./hack/compare -run TestGeneratedCorpus -update)", path)
			}
		}
	}
}
