package mcoimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
)

// Report is the account of a conversion for the administrator: what was
// imported, which entries ndp's defaults already cover (and so were left
// out), which override a default, which had no effect, and warnings. The
// CLI prints it on stderr, and YAML repeats it as comments.
func (r *Result) Report() []string {
	total := len(r.Imported) + len(r.Covered) + len(r.Skipped)
	obj := fmt.Sprintf("%s %q", Kind, r.Source.Object.Name)
	if r.Source.Object.Name == "" {
		obj = Kind
	}
	var lines []string
	if r.Policy == nil {
		lines = append(lines, fmt.Sprintf("%s (%s): nothing to import, ndp's built-in defaults already do what its %d %s ask.", obj, r.Source.Origin, total, plural(total, "entry", "entries")))
	} else {
		lines = append(lines,
			fmt.Sprintf("%s (%s): %d of %d %s imported", obj, r.Source.Origin, len(r.Imported), total, plural(total, "entry", "entries")),
			fmt.Sprintf("into NodeDisruptionPolicy %q, priority %d: they override ndp's defaults (priority %d) for the same paths, as in the MCO.", r.Policy.Name, r.Policy.EffectivePriority(), v1alpha1.DefaultsPriority))
	}
	section := func(title string, entries []Entry, line func(Entry) string) {
		if len(entries) == 0 {
			return
		}
		lines = append(lines, title)
		for _, e := range entries {
			lines = append(lines, "  "+place(e)+line(e))
		}
	}
	section("Not imported, ndp's built-in defaults already do the same:", r.Covered, func(e Entry) string {
		return fmt.Sprintf("%s: %s, as %s", e.What(), planner.FormatActions(e.Actions), e.Default)
	})
	var overrides, noted []Entry
	for _, e := range r.Imported {
		switch {
		case e.Default != "" && e.Default != unclaimed && e.DefaultActions != planner.FormatActions(e.Actions):
			overrides = append(overrides, e)
		case e.Note != "":
			noted = append(noted, e)
		}
	}
	section("Imported, overriding a default (the actions differ):", overrides, func(e Entry) string {
		s := fmt.Sprintf("%s: %s instead of %s", e.What(), planner.FormatActions(e.Actions), e.Default)
		if e.DefaultActions != "" {
			s += " (" + e.DefaultActions + ")"
		}
		if e.Note != "" {
			s += "; " + e.Note
		}
		return s
	})
	section("Imported, with a note:", noted, func(e Entry) string {
		return fmt.Sprintf("%s: %s: %s", e.What(), planner.FormatActions(e.Actions), e.Note)
	})
	section("Not imported, no effect:", r.Skipped, func(e Entry) string {
		return fmt.Sprintf("%s: %s", e.What(), e.Note)
	})
	if len(r.Warnings) > 0 {
		lines = append(lines, "Warnings:")
		for _, w := range r.Warnings {
			lines = append(lines, "  "+w)
		}
	}
	return lines
}

func place(e Entry) string {
	s := short(e.Field)
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s + ": "
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// YAML is the NodeDisruptionPolicy to apply, preceded by the report as
// comments; only the comments when there is nothing to import.
func (r *Result) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by `ndp import machineconfiguration`.\n")
	for _, l := range r.Report() {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	if r.Policy == nil {
		return b.Bytes(), nil
	}
	// Only what the object needs (no status, no empty metadata), in the
	// Go types' field order (path before actions, type before reload), which
	// encoding/json keeps and yaml.v3's nodes carry over.
	doc := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec v1alpha1.NodeDisruptionPolicySpec `json:"spec"`
	}{APIVersion: r.Policy.APIVersion, Kind: r.Policy.Kind, Spec: r.Policy.Spec}
	doc.Metadata.Name = r.Policy.Name
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var node yamlv3.Node
	if err := yamlv3.Unmarshal(j, &node); err != nil {
		return nil, err
	}
	blockStyle(&node)
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blockStyle turns the JSON-parsed nodes (flow style, quoted strings) into
// plain block YAML, multi-line strings (the Rego) as literal blocks.
func blockStyle(n *yamlv3.Node) {
	n.Style = 0
	if n.Kind == yamlv3.ScalarNode && strings.Contains(n.Value, "\n") {
		n.Style = yamlv3.LiteralStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
