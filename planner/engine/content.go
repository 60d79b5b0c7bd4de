package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
)

// File contents cost: parsing, diffing and converting them to Rego values
// is most of a plan's time when many files changed. The engine builds them
// only when a policy of the set may read them: when its Rego names one of
// these keys (change.old.data, change.diff, object.get(change, "diff", [])...)
// or calls a library rule that does. "old" and "new" alone do not count:
// OS changes and the registries diff use them too, and a side of a file
// is read through its keys. A policy that reads changes only as whole
// values (walk, json.marshal, change.old == change.new, iterating a
// change's keys) without naming a key sees changes without contents.
func contentKey(s string) bool {
	switch s {
	case "diff", "diffTruncated", "text", "data", "format", "omitted", "size":
		return true
	}
	return false
}

// readsContent reports whether some policy module of the compiled set may
// read file contents.
func readsContent(c *ast.Compiler) bool {
	libRoot, policyRoot := ast.MustParseRef("data.ndp.lib"), ast.MustParseRef("data."+policy.Package)
	var lib, policies []*ast.Module
	for _, m := range c.Modules {
		switch {
		case m.Package.Path.HasPrefix(libRoot):
			lib = append(lib, m)
		case m.Package.Path.HasPrefix(policyRoot):
			policies = append(policies, m)
		}
	}
	// The library's rules that read contents, to a fixpoint: a rule that
	// calls one reads them too.
	libReads := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, m := range lib {
			for _, r := range m.Rules {
				name := r.Head.Ref()[0].Value.String()
				if !libReads[name] && mentionsContent(r, libRoot, libReads) {
					libReads[name], changed = true, true
				}
			}
		}
	}
	for _, m := range policies {
		if mentionsContent(m, libRoot, libReads) {
			return true
		}
	}
	return false
}

// mentionsContent: x names a content key, or refers to a library rule that
// reads contents (or to the library with a key not known in advance).
func mentionsContent(x any, libRoot ast.Ref, libReads map[string]bool) bool {
	found := false
	ast.WalkTerms(x, func(t *ast.Term) bool {
		if found {
			return true
		}
		switch v := t.Value.(type) {
		case ast.String:
			found = contentKey(string(v))
		case ast.Ref:
			if !v.HasPrefix(ast.DefaultRootRef) {
				break
			}
			// A rule's name in a data ref is no content key (the default
			// policy's rule "diff"): only the ref's computed parts count.
			if v.HasPrefix(libRoot) {
				s, ok := ast.String(""), len(v) > len(libRoot)
				if ok {
					s, ok = v[len(libRoot)].Value.(ast.String)
				}
				found = !ok || libReads[string(s)]
			}
			for _, part := range v[1:] {
				if _, named := part.Value.(ast.String); !named && !found {
					found = mentionsContent(part, libRoot, libReads)
				}
			}
			return true
		}
		return found
	})
	return found
}

// contentValues adds a file change's contents to its Rego value: old and
// new (objects, replacing nothing: file changes have no OS values), diff
// and diffTruncated.
func contentValues(m map[string]any, cs *changeset.ChangeSet, c *changeset.Change) {
	if c.Kind != changeset.KindFile {
		return
	}
	cc := cs.Contents(c.ID)
	if cc == nil {
		return
	}
	if cc.Old != nil {
		m["old"] = contentValue(cc.Old)
	}
	if cc.New != nil {
		m["new"] = contentValue(cc.New)
	}
	if c.Op == changeset.OpChanged && cc.Diff != nil {
		list := make([]any, len(cc.Diff))
		for i := range cc.Diff {
			list[i] = diffValue(&cc.Diff[i])
		}
		m["diff"] = list
		if cc.DiffTruncated {
			m["diffTruncated"] = true
		}
	}
}

func contentValue(c *changeset.Content) map[string]any {
	v := map[string]any{"format": c.Format}
	if c.Size != nil {
		v["size"] = *c.Size
	}
	if c.Text != nil {
		v["text"] = *c.Text
	}
	if c.Data != nil {
		v["data"] = c.Data
	}
	if c.Omitted != "" {
		v["omitted"] = c.Omitted
	}
	return v
}

func diffValue(e *changeset.DiffEntry) map[string]any {
	if !e.Data() {
		return map[string]any{"op": e.Op, "line": e.Line, "text": e.Text}
	}
	v := map[string]any{"op": e.Op, "path": e.Path}
	if e.Op != changeset.DiffAdded {
		v["old"] = e.Old
	}
	if e.Op != changeset.DiffRemoved {
		v["new"] = e.New
	}
	return v
}
