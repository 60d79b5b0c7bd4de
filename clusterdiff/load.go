package clusterdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// stdin is what "-" reads; a variable for the tests.
var stdin io.Reader = os.Stdin

// LoadManifests reads the change set of -f: each path a file, a directory
// (its .yaml, .yml and .json files, recursively, in lexical order) or "-"
// for stdin. Files hold YAML documents or JSON; Lists are expanded. Every
// object must be of a kind a change set may hold, named, with no field its
// type does not know, and in the change set once.
func LoadManifests(paths []string) ([]Entry, error) {
	d := decoder{manifests: true}
	var out []Entry
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			es, err := d.readFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
	}
	return out, checkDuplicates(out)
}

// LoadKustomize reads the change set of -k: what `kustomize build DIR`
// prints.
func LoadKustomize(dir string) ([]Entry, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	d := decoder{manifests: true}
	src := "kustomize " + dir
	var out []Entry
	for _, r := range m.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", src, r.GetKind(), r.GetName(), err)
		}
		es, err := d.decode(src, js, func(int) string { return src })
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, checkDuplicates(out)
}

// manifestFiles are the files of a path: itself, or a directory's
// manifests, walked in lexical order.
func manifestFiles(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isManifest(path) {
			files = append(files, path)
		}
		return err
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s: no .yaml, .yml or .json files", p)
	}
	return files, err
}

func isManifest(path string) bool {
	switch filepath.Ext(path) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// decoder turns documents into entries.
type decoder struct {
	// manifests: a change set's, decoded strictly (unknown and duplicate
	// fields are errors, as the API server's field validation would say)
	// and of change-set kinds only. Otherwise a snapshot's: written by a
	// cluster perhaps newer than these types, so unknown fields pass, and
	// objects of kinds the diff does not read are counted in skipped.
	manifests bool
	skipped   map[string]int
}

func (d *decoder) readFile(name string) ([]Entry, error) {
	var data []byte
	var err error
	if name == "-" {
		name = "stdin"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, doc := range splitDocuments(data) {
		es, err := d.document(name, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// document is one YAML document of a file.
type document struct {
	start int // the line of the file its first line is
	first int // its first line that is neither blank nor a comment
	data  []byte
}

// splitDocuments splits YAML at "---" lines as apimachinery's YAMLReader
// does, but keeps each document's line numbers, which YAMLReader does not
// tell. JSON has no such lines and is one document.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{start: 1}
	line := 0
	for len(data) > 0 {
		line++
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l = data[:i+1]
		}
		data = data[len(l):]
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok && (len(bytes.TrimSpace(rest)) == 0 || bytes.TrimSpace(rest)[0] == '#') {
			docs = append(docs, cur)
			cur = document{start: line + 1}
			continue
		}
		if t := bytes.TrimSpace(l); cur.first == 0 && len(t) > 0 && t[0] != '#' {
			cur.first = line
		}
		cur.data = append(cur.data, l...)
	}
	docs = append(docs, cur)
	out := docs[:0]
	for _, doc := range docs {
		if doc.first != 0 {
			out = append(out, doc)
		}
	}
	return out
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func (d *decoder) document(name string, doc document) ([]Entry, error) {
	toJSON := yaml.YAMLToJSON
	if d.manifests {
		toJSON = yaml.YAMLToJSONStrict // duplicate keys
	}
	js, err := toJSON(doc.data)
	if err != nil {
		// The YAML parser counts lines from the document's start.
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		at := doc.first
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			at = doc.start + n - 1
		}
		msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
			n, _ := strconv.Atoi(m[len("line "):])
			return "line " + strconv.Itoa(doc.start+n-1)
		})
		// "yaml: line N: problem", or for a duplicate key "yaml: unmarshal
		// errors:\n  line N: problem": the line is said once, before.
		msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n  ")
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, "yaml: "), fmt.Sprintf("line %d: ", at))
		return nil, fmt.Errorf("%s:%d: YAML syntax error: %s", name, at, msg)
	}
	if string(js) == "null" {
		return nil, nil // only comments
	}
	src := fmt.Sprintf("%s:%d", name, doc.first)
	var lines []int
	return d.decode(src, js, func(i int) string {
		if lines == nil {
			lines = itemLines(doc.data)
		}
		if i < len(lines) {
			return fmt.Sprintf("%s:%d", name, doc.start+lines[i]-1)
		}
		return fmt.Sprintf("%s item %d", src, i+1)
	})
}

// itemLines are the lines, from the document's start, of a List's items
// (none if they cannot be told).
func itemLines(data []byte) []int {
	var n yamlv3.Node
	if yamlv3.Unmarshal(data, &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yamlv3.MappingNode {
		return []int{}
	}
	m := n.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		if m[i].Value == "items" && m[i+1].Kind == yamlv3.SequenceNode {
			lines := []int{}
			for _, item := range m[i+1].Content {
				lines = append(lines, item.Line)
			}
			return lines
		}
	}
	return []int{}
}

// header is what is read of a document before its kind is known.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// decode reads a document's JSON: an object, or a List (or a typed list,
// "MachineConfigList") whose items are; itemSrc is the source of item i.
func (d *decoder) decode(src string, js []byte, itemSrc func(i int) string) ([]Entry, error) {
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object: %w", src, err)
	}
	if h.Kind != "List" && (!strings.HasSuffix(h.Kind, "List") || h.Items == nil) {
		e, err := d.object(src, js, h, nil)
		if err != nil || e.Object == nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	// A typed list's items may omit their apiVersion and kind (the API
	// server's list responses do).
	var defaults *schema.GroupVersionKind
	if h.Kind != "List" {
		gvk := schema.FromAPIVersionAndKind(h.APIVersion, strings.TrimSuffix(h.Kind, "List"))
		defaults = &gvk
	}
	var out []Entry
	for i, item := range h.Items {
		src := itemSrc(i)
		var ih header
		if err := json.Unmarshal(item, &ih); err != nil {
			return nil, fmt.Errorf("%s: not a Kubernetes object: %w", src, err)
		}
		e, err := d.object(src, item, ih, defaults)
		if err != nil {
			return nil, err
		}
		if e.Object != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

var (
	strictSerializer = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{Strict: true})
	laxSerializer    = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{})
)

// object decodes one object; a skipped one is the zero Entry.
func (d *decoder) object(src string, js []byte, h header, defaults *schema.GroupVersionKind) (Entry, error) {
	if defaults != nil {
		if h.APIVersion == "" {
			h.APIVersion = defaults.GroupVersion().String()
		}
		if h.Kind == "" {
			h.Kind = defaults.Kind
		}
	}
	if h.APIVersion == "" || h.Kind == "" {
		return Entry{}, fmt.Errorf("%s: not a Kubernetes object: no apiVersion or kind", src)
	}
	gvk := schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
	k, known := kindOf(gvk.Group, gvk.Kind)
	what := strings.TrimSpace(h.Kind + " " + h.Metadata.Name)
	if !known || !Scheme.Recognizes(gvk) {
		if !d.manifests {
			label := h.Kind
			if known {
				label = h.APIVersion + " " + h.Kind
			}
			if d.skipped == nil {
				d.skipped = map[string]int{}
			}
			d.skipped[label]++
			return Entry{}, nil
		}
		if known {
			return Entry{}, fmt.Errorf("%s: %s: apiVersion %s is not a version of %s the diff reads: use %s", src, what, h.APIVersion, h.Kind, k.GVK().GroupVersion())
		}
		hint := ""
		if h.Kind == "Kustomization" {
			hint = " (a kustomization is built with -k DIR)"
		}
		return Entry{}, fmt.Errorf("%s: %s (apiVersion %s, kind %s): not a kind a change set may hold%s; it holds (kind and apiVersion) %s", src, what, h.APIVersion, h.Kind, hint, changeKinds())
	}
	if d.manifests && !k.Change {
		return Entry{}, fmt.Errorf("%s: %s: a %s is read from the cluster, not something a change set may hold; it holds %s", src, what, h.Kind, changeKinds())
	}
	if h.Metadata.Name == "" {
		return Entry{}, fmt.Errorf("%s: %s has no metadata.name", src, h.Kind)
	}
	ser := laxSerializer
	if d.manifests {
		ser = strictSerializer
	}
	got, _, err := ser.Decode(js, &gvk, k.New())
	if err != nil {
		if runtime.IsStrictDecodingError(err) {
			err = fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "strict decoding error: "))
		}
		return Entry{}, fmt.Errorf("%s: %s: %w", src, what, err)
	}
	obj, ok := got.(client.Object)
	if !ok {
		return Entry{}, fmt.Errorf("%s: %s: decoded as %T", src, what, got)
	}
	switch {
	case k.Namespaced && obj.GetNamespace() == "":
		return Entry{}, fmt.Errorf("%s: %s has no metadata.namespace", src, what)
	case !k.Namespaced:
		obj.SetNamespace("") // as the API server ignores it
	}
	return Entry{Object: obj, Source: src}, nil
}

// changeKinds lists the kinds a change set may hold, with their
// apiVersions.
func changeKinds() string {
	var out []string
	for _, k := range Kinds {
		if k.Change {
			out = append(out, fmt.Sprintf("%s (%s)", k.Kind, k.GVK().GroupVersion()))
		}
	}
	return strings.Join(out, ", ")
}

// checkDuplicates fails on an object twice in a change set.
func checkDuplicates(entries []Entry) error {
	seen := map[Key]string{}
	for _, e := range entries {
		k, err := KeyOf(e.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Source, err)
		}
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("%s is in the change set twice: %s and %s", objectName(k), prev, e.Source)
		}
		seen[k] = e.Source
	}
	return nil
}

// objectName is "Kind name" or "Kind namespace/name".
func objectName(k Key) string {
	if k.Namespace != "" {
		return k.Kind + " " + k.Namespace + "/" + k.Name
	}
	return k.Kind + " " + k.Name
}
