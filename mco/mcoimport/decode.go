package mcoimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	yamlv3 "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/machineconfig"
)

// Kind and APIVersion of the object imported.
const (
	Kind       = "MachineConfiguration"
	APIVersion = "operator.openshift.io/v1"
)

// ClusterName is the only MachineConfiguration the MCO reads (its
// ctrlcommon.MCOOperatorKnobsObjectName); the MCO's docs/NodeDisruptionPolicy.md:
// "Any MachineConfiguration object made with another name will be rejected
// via a ValidatingAdmissionPolicy".
const ClusterName = "cluster"

// Source is one MachineConfiguration to import and where it came from.
type Source struct {
	// Origin names where it was read, for messages: a file name, or
	// `the cluster`.
	Origin string
	Object *operatorv1.MachineConfiguration
	// Line gives the line of a field of Object in its file
	// ("spec.nodeDisruptionPolicy.files[2].actions[0].type"); 0 when
	// unknown (an object read from the cluster). May be nil.
	Line func(field string) int
}

func (s *Source) line(field string) int {
	if s.Line == nil {
		return 0
	}
	return s.Line(field)
}

// object names the MachineConfiguration in messages.
func (s *Source) object() string {
	if s.Object == nil || s.Object.Name == "" {
		return s.Origin
	}
	return fmt.Sprintf("%s: %s %q", s.Origin, Kind, s.Object.Name)
}

// document is one YAML document of a file, with the line its first line
// has in the file.
type document struct {
	index int // 1-based
	first int // line number of its first line in the file
	data  []byte
}

// splitDocuments cuts a YAML stream at its "---" separator lines, keeping
// each document's position in the file so that errors name file lines.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{index: 1, first: 1}
	line := 1
	for len(data) > 0 {
		end := bytes.IndexByte(data, '\n')
		next := len(data)
		if end >= 0 {
			next = end + 1
		}
		l := data[:next]
		if bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\n' || l[3] == '\r') {
			docs = append(docs, cur)
			cur = document{index: cur.index + 1, first: line + 1}
		} else {
			cur.data = append(cur.data, l...)
		}
		data = data[next:]
		line++
	}
	return append(docs, cur)
}

var lineInMessage = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML parser's message into an InputError naming the
// file line.
func yamlError(object string, doc document, err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := lineInMessage.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		line = n + doc.first - 1
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
		msg = strings.TrimSpace(strings.Replace(msg, m[0], "", 1))
		msg = strings.TrimSpace(strings.TrimPrefix(msg, "unmarshal errors: "))
	}
	return &machineconfig.InputError{Object: object, Line: line, Err: fmt.Errorf("malformed YAML: %s", msg)}
}

// decoded is one MachineConfiguration found in a file.
type decoded struct {
	mc     *operatorv1.MachineConfiguration
	object string // for messages
	lines  *lineFinder
	prefix string // its field path in its document: "" or "items[2]."
}

// Read decodes a file holding one MachineConfiguration (YAML or JSON), as
// `oc get machineconfiguration cluster -o yaml` prints it. A file holding
// several documents or a List (what `oc get machineconfigurations -o yaml`
// prints) is accepted when exactly one of its MachineConfigurations is the
// one the MCO reads, "cluster", or when it holds only one. Decoding is
// strict (sigs.k8s.io/yaml's YAML-to-JSON conversion, as kubectl's, with
// duplicate keys refused, then every field known to openshift/api's
// operator/v1 types): a field unknown under spec.nodeDisruptionPolicy is an
// error naming the field and its line, since a misspelt key would silently
// drop a rule; one elsewhere (a newer OpenShift's field, say) is returned as
// a warning. origin names the file in messages.
func Read(origin string, data []byte) (*Source, []string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, &machineconfig.InputError{Object: origin, Err: errors.New("empty file, expected a MachineConfiguration (operator.openshift.io/v1)")}
	}
	var found []decoded
	var warnings []string
	docs := splitDocuments(data)
	for _, doc := range docs {
		object := origin
		if len(docs) > 1 {
			object = fmt.Sprintf("%s: document %d", origin, doc.index)
		}
		// sigs.k8s.io/yaml first: its syntax errors name the line kubectl
		// and `ndp plan` name (yaml.v3's are often a line or more early);
		// yaml.v3's node tree then gives the lines of fields.
		raw, err := yaml.YAMLToJSONStrict(doc.data)
		if err != nil {
			return nil, nil, yamlError(object, doc, err)
		}
		var node yamlv3.Node
		if err := yamlv3.Unmarshal(doc.data, &node); err != nil {
			return nil, nil, yamlError(object, doc, err)
		}
		if node.Kind == 0 || len(node.Content) == 0 || node.Content[0].Tag == "!!null" {
			continue // empty, or only comments
		}
		root := node.Content[0]
		if root.Kind != yamlv3.MappingNode {
			return nil, nil, &machineconfig.InputError{Object: object, Line: root.Line + doc.first - 1, Err: errors.New("expected a MachineConfiguration object (a YAML mapping)")}
		}
		lines := &lineFinder{root: root, offset: doc.first - 1}
		var meta struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, nil, typeError(object, "", raw, err, lines)
		}
		switch {
		case meta.Kind == "List" && meta.APIVersion == "v1",
			meta.Kind == Kind+"List" && meta.APIVersion == APIVersion:
			for i, item := range meta.Items {
				prefix := fmt.Sprintf("items[%d].", i)
				d, warns, err := decodeObject(fmt.Sprintf("%s: %s", object, strings.TrimSuffix(prefix, ".")), item, lines, prefix)
				if err != nil {
					return nil, nil, err
				}
				warnings = append(warnings, warns...)
				found = append(found, d)
			}
		default:
			d, warns, err := decodeObject(object, raw, lines, "")
			if err != nil {
				return nil, nil, err
			}
			warnings = append(warnings, warns...)
			found = append(found, d)
		}
	}
	var pick *decoded
	switch {
	case len(found) == 0:
		return nil, nil, &machineconfig.InputError{Object: origin, Err: errors.New("no MachineConfiguration in the file")}
	case len(found) == 1:
		pick = &found[0]
	default:
		var names []string
		for i := range found {
			names = append(names, strconv.Quote(found[i].mc.Name))
			if found[i].mc.Name == ClusterName {
				if pick != nil {
					return nil, nil, &machineconfig.InputError{Object: origin, Err: fmt.Errorf("holds two MachineConfigurations named %q", ClusterName)}
				}
				pick = &found[i]
			}
		}
		if pick == nil {
			return nil, nil, &machineconfig.InputError{Object: origin, Err: fmt.Errorf("holds %d MachineConfigurations (%s) and none is %q, the one the MCO reads: keep one", len(found), strings.Join(names, ", "), ClusterName)}
		}
		warnings = append(warnings, fmt.Sprintf("%s holds %d MachineConfigurations: importing %q, the one the MCO reads, and ignoring %s", origin, len(found), ClusterName, strings.Join(without(names, strconv.Quote(ClusterName)), ", ")))
	}
	if pick.mc.Name != ClusterName {
		name := pick.mc.Name
		if name == "" {
			name = "(no name)"
		}
		warnings = append(warnings, fmt.Sprintf("%s: MachineConfiguration %s is not %q: the MCO reads only MachineConfiguration %q (and refuses others), so this one had no effect on nodes", origin, name, ClusterName, ClusterName))
	}
	prefix, lines := pick.prefix, pick.lines
	src := &Source{Origin: origin, Object: pick.mc, Line: func(field string) int { return lines.line(prefix + field) }}
	return src, warnings, nil
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// decodeObject decodes one MachineConfiguration strictly. lines finds the
// line of a field of the document; prefix is the object's own path in it.
func decodeObject(object string, raw []byte, lines *lineFinder, prefix string) (decoded, []string, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return decoded{}, nil, typeError(object, prefix, raw, err, lines)
	}
	if meta.Metadata.Name != "" {
		object = fmt.Sprintf("%s: %s %q", object, Kind, meta.Metadata.Name)
	}
	if meta.Kind != Kind || meta.APIVersion != APIVersion {
		field, got := "kind", meta.Kind
		if meta.Kind == Kind {
			field, got = "apiVersion", meta.APIVersion
		}
		what := fmt.Sprintf("%q", got)
		if got == "" {
			what = "missing"
		} else if meta.Kind != Kind && meta.APIVersion != "" {
			what = fmt.Sprintf("%s %s", meta.APIVersion, meta.Kind)
		}
		return decoded{}, nil, &machineconfig.InputError{Object: object, Field: prefix + field, Line: lines.line(prefix + field),
			Err: fmt.Errorf("is %s, expected %s %s (the MCO's operator configuration, `oc get machineconfiguration cluster -o yaml`)", what, APIVersion, Kind)}
	}
	var mc operatorv1.MachineConfiguration
	strict, err := kjson.UnmarshalStrict(raw, &mc, kjson.DisallowUnknownFields)
	if err != nil {
		return decoded{}, nil, typeError(object, prefix, raw, err, lines)
	}
	var warnings []string
	var errs []error
	for _, se := range strict {
		m := strictField.FindStringSubmatch(se.Error())
		if m == nil {
			errs = append(errs, &machineconfig.InputError{Object: object, Err: se})
			continue
		}
		kind, field := m[1], m[2]
		if strings.HasPrefix(field, "spec.nodeDisruptionPolicy") {
			msg := "unknown field: the MachineConfiguration API has no such field (misspelt?)"
			if kind == "duplicate" {
				msg = "duplicate field"
			}
			errs = append(errs, &machineconfig.InputError{Object: object, Field: prefix + field, Line: lines.line(prefix + field), Err: errors.New(msg)})
			continue
		}
		where := prefix + field
		if l := lines.line(prefix + field); l > 0 {
			where += fmt.Sprintf(" (line %d)", l)
		}
		warnings = append(warnings, fmt.Sprintf("%s: ignoring %s field %s: not in the pinned openshift/api MachineConfiguration, and not part of spec.nodeDisruptionPolicy", object, kind, where))
	}
	if len(errs) > 0 {
		return decoded{}, nil, errors.Join(errs...)
	}
	return decoded{mc: &mc, object: object, lines: lines, prefix: prefix}, warnings, nil
}

var strictField = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// typeError reports a JSON type error (a string where a list is expected,
// say) with the field path and the line of the offending value.
func typeError(object, prefix string, raw []byte, err error, lines *lineFinder) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := jsonPathAt(raw, te.Offset)
		if field == "" {
			field = te.Field
		}
		return &machineconfig.InputError{Object: object, Field: prefix + field, Line: lines.line(prefix + field),
			Err: fmt.Errorf("is a %s, expected %s", te.Value, typeName(te.Type.String()))}
	}
	return &machineconfig.InputError{Object: object, Err: err}
}

func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "v1.") || strings.HasPrefix(t, "struct"):
		return "an object"
	case t == "string" || strings.HasSuffix(t, "Type") || strings.HasSuffix(t, "Name"):
		return "a string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case t == "bool":
		return "a boolean"
	}
	return t
}

// jsonPathAt is the field path ("spec.files[1].path") of the value that
// ends at or spans offset in a JSON document.
func jsonPathAt(raw []byte, offset int64) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		array     bool
		index     int
		key       string
		expectKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				fmt.Fprintf(&b, "[%d]", f.index)
			} else if f.key != "" {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	// valueDone moves the enclosing container past a value.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].expectKey = true
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return ""
			}
			return path()
		}
		at := dec.InputOffset()
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if at >= offset {
					return path()
				}
				stack = append(stack, frame{array: d == '[', expectKey: d == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].expectKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].expectKey = false
			continue
		}
		if at >= offset {
			return path()
		}
		valueDone()
	}
}

// lineFinder finds the line of a field path in a YAML document.
type lineFinder struct {
	root   *yamlv3.Node
	offset int
}

var pathSegment = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

// line is the file line of the field at path ("spec.files[1].path"): its
// key for a mapping entry, its first line for a list item, or the line of
// the deepest part of the path that exists. 0 when unknown.
func (f *lineFinder) line(path string) int {
	if f == nil || f.root == nil {
		return 0
	}
	n, line := f.root, f.root.Line
	for _, seg := range pathSegment.FindAllString(path, -1) {
		if strings.HasPrefix(seg, "[") {
			i, _ := strconv.Atoi(strings.Trim(seg, "[]"))
			if n.Kind != yamlv3.SequenceNode || i >= len(n.Content) {
				break
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		if n.Kind != yamlv3.MappingNode {
			break
		}
		var next *yamlv3.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line + f.offset
}
