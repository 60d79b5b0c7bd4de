package mcorender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	yamlv2 "go.yaml.in/yaml/v2"
)

// mcoYAML is the YAML the MCO hashes for a rendered config's name, the
// bytes of sigs.k8s.io/yaml.Marshal(spec) (and of ghodss/yaml's), made
// without its round trip through the YAML parser: that converter decodes
// its own JSON with go-yaml only to type the numbers, which took as long
// as writing the YAML for a 160 KB config. Here encoding/json decodes it,
// and each number gets the type go-yaml's resolver gives that text
// (int, int64, uint64, float64, else a string); the maps and lists are
// the same, and go-yaml's encoder writes them alike (keys sorted).
// TestMCOYAMLIsSigsYAML holds the two to the same bytes.
//
// spec.config, nearly all of the spec, is decoded from its raw JSON as it
// is rather than encoded again (compacted) within the spec first.
func mcoYAML(spec mcfgv1.MachineConfigSpec) ([]byte, error) {
	raw := spec.Config.Raw
	spec.Config.Raw = nil
	j, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	v, err := decodeNumbers(j)
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		m, ok := v.(map[string]any)
		if _, has := m["config"]; !ok || !has {
			return nil, fmt.Errorf("no config in the encoded spec")
		}
		if m["config"], err = decodeNumbers(raw); err != nil {
			return nil, fmt.Errorf("spec.config: %w", err)
		}
	}
	return yamlv2.Marshal(yamlNumbers(v))
}

// decodeNumbers decodes one JSON value, numbers as json.Number.
func decodeNumbers(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding its own JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decoding its own JSON: more than one value")
	}
	return v, nil
}

// yamlNumbers replaces, in place, each json.Number by the value go-yaml's
// resolver makes of the same plain scalar.
func yamlNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = yamlNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = yamlNumbers(e)
		}
	case json.Number:
		s := string(t)
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			if i == int64(int(i)) {
				return int(i)
			}
			return i
		}
		if u, err := strconv.ParseUint(s, 0, 64); err == nil {
			return u
		}
		// Every JSON number has the form of go-yaml's floats.
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
		return s
	}
	return v
}
