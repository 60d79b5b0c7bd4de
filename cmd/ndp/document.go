package main

import (
	"encoding/json"
	"io"

	"sigs.k8s.io/yaml"
)

// writeDocument writes v as -o json (indented) or -o yaml, and tells
// whether format was one of them; every command's text output is its own.
func writeDocument(w io.Writer, v any, format string) (bool, error) {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}
