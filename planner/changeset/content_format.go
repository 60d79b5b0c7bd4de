package changeset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// inspect reads one side of a file: its format, from the contents (the
// file name only breaks ties), its text and its parsed data.
func inspect(name string, r rawSide) *Content {
	c := &Content{Format: FormatUnknown, Omitted: r.omitted}
	if r.size >= 0 {
		size := r.size
		c.Size = &size
	}
	if r.data == nil && r.size != 0 {
		return c
	}
	b := r.data
	switch {
	case bytes.IndexByte(b, 0) >= 0:
		c.Format, c.Omitted = FormatBinary, "binary contents (NUL bytes)"
		return c
	case !utf8.Valid(b):
		c.Format, c.Omitted = FormatBinary, "binary contents (not UTF-8)"
		return c
	}
	text := string(b)
	c.Format, c.Text = FormatText, &text
	if data, ok := parseJSON(b); ok {
		c.Format, c.Data = FormatJSON, data
		return c
	}
	parsers := []struct {
		format string
		parse  func([]byte) (any, bool)
	}{{FormatYAML, parseYAML}, {FormatTOML, parseTOML}}
	switch strings.ToLower(path.Ext(name)) {
	case ".toml", ".conf":
		parsers[0], parsers[1] = parsers[1], parsers[0]
	}
	for _, p := range parsers {
		if data, ok := p.parse(b); ok {
			c.Format, c.Data = p.format, data
			return c
		}
	}
	return c
}

// parseJSON: a JSON object or array, and nothing after it.
func parseJSON(b []byte) (data any, ok bool) {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return canonical(v), true
}

// parseYAML: a single YAML document that is a map or a list. Plain text
// ("server x iburst", "KEY=value") is a YAML scalar: not YAML here. The
// whole stream must parse (YAML v2, under sigs.k8s.io/yaml, stops after
// "[Unit]" and would call a systemd unit a list).
func parseYAML(b []byte) (data any, ok bool) {
	defer func() {
		if recover() != nil {
			data, ok = nil, false
		}
	}()
	// A collection needs one of these; without any the text is a scalar,
	// and the (costly) parse is skipped.
	if !bytes.ContainsAny(b, ":-[{?!") {
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	switch v.(type) {
	case map[string]any, map[any]any, []any:
	default:
		return nil, false
	}
	var next any
	if !errors.Is(dec.Decode(&next), io.EOF) {
		return nil, false
	}
	return canonical(v), true
}

// parseTOML: a TOML document with at least one key/value (an empty table
// alone, "[Unit]", is no evidence of TOML).
func parseTOML(b []byte) (data any, ok bool) {
	defer func() {
		if recover() != nil {
			data, ok = nil, false
		}
	}()
	if !bytes.ContainsRune(b, '=') {
		return nil, false
	}
	var m map[string]any
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil || !hasLeaf(m) {
		return nil, false
	}
	return canonical(m), true
}

func hasLeaf(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return true
	}
	for _, x := range m {
		if hasLeaf(x) {
			return true
		}
	}
	return false
}

// canonical turns a parsed document into JSON types with canonical
// numbers, so that equal values of different formats compare equal and
// convert to Rego: TOML's integers, floats and datetimes included.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonical(e)
		}
		return x
	case map[any]any: // YAML keys that are not strings
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = canonical(e)
		}
		return out
	case []map[string]any: // TOML arrays of tables
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = canonical(e)
		}
		return x
	case json.Number:
		return canonicalNumber(string(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case int:
		return json.Number(strconv.Itoa(x))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case float64:
		return floatValue(x)
	case time.Time:
		return tomlTime(x)
	case string, bool, nil:
		return x
	}
	return fmt.Sprint(v)
}

// canonicalNumber: integers as they are written (JSON has no leading
// zeros), other numbers in Go's shortest form, integral ones as integers
// (250.0 is 250).
func canonicalNumber(s string) any {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.Number(s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of float64 range: kept as written.
		return json.Number(s)
	}
	return floatValue(f)
}

func floatValue(f float64) any {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		// TOML's nan and inf have no JSON number.
		return strconv.FormatFloat(f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// tomlTime writes a TOML datetime as TOML does: local dates, times and
// datetimes without a zone.
func tomlTime(t time.Time) string {
	switch t.Location().String() {
	case "date-local":
		return t.Format("2006-01-02")
	case "time-local":
		return t.Format("15:04:05.999999999")
	case "datetime-local":
		return t.Format("2006-01-02T15:04:05.999999999")
	}
	return t.Format(time.RFC3339Nano)
}
