package changeset

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// diffContents fills the diff of a changed file: the leaves of the parsed
// documents that differ when both sides have data (whatever their formats:
// the MCO's kubelet.conf is YAML in the base and JSON once generated),
// else the lines added and removed when both have text.
func diffContents(cc *ContentChange) {
	o, n := cc.Old, cc.New
	switch {
	case o.Data != nil && n.Data != nil:
		d := &dataDiff{out: []DiffEntry{}}
		d.walk(nil, o.Data, n.Data)
		cc.Diff, cc.DataDiff, cc.DiffTruncated = d.out, true, d.truncated
	case o.Text != nil && n.Text != nil:
		cc.Diff, cc.DiffTruncated = lineDiff(*o.Text, *n.Text)
	}
}

// dataDiff collects differing leaves, at most MaxDiffEntries.
type dataDiff struct {
	out       []DiffEntry
	truncated bool
}

func (d *dataDiff) add(e DiffEntry) bool {
	if len(d.out) >= MaxDiffEntries {
		d.truncated = true
		return false
	}
	d.out = append(d.out, e)
	return true
}

// walk compares two values at path: maps by key in sorted order, lists by
// index; anything else (a scalar, or a change of type) is one leaf.
func (d *dataDiff) walk(path []any, o, n any) bool {
	switch ov := o.(type) {
	case map[string]any:
		nv, ok := n.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(ov)+len(nv))
		for k := range ov {
			keys = append(keys, k)
		}
		for k := range nv {
			if _, dup := ov[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			oe, inOld := ov[k]
			ne, inNew := nv[k]
			p := append(path[:len(path):len(path)], k)
			var more bool
			switch {
			case !inOld:
				more = d.add(DiffEntry{Op: DiffAdded, Path: p, New: ne})
			case !inNew:
				more = d.add(DiffEntry{Op: DiffRemoved, Path: p, Old: oe})
			default:
				more = d.walk(p, oe, ne)
			}
			if !more {
				return false
			}
		}
		return true
	case []any:
		nv, ok := n.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(ov), len(nv)); i++ {
			p := append(path[:len(path):len(path)], i)
			var more bool
			switch {
			case i >= len(ov):
				more = d.add(DiffEntry{Op: DiffAdded, Path: p, New: nv[i]})
			case i >= len(nv):
				more = d.add(DiffEntry{Op: DiffRemoved, Path: p, Old: ov[i]})
			default:
				more = d.walk(p, ov[i], nv[i])
			}
			if !more {
				return false
			}
		}
		return true
	}
	if sameLeaf(o, n) {
		return true
	}
	if path == nil {
		path = []any{}
	}
	return d.add(DiffEntry{Op: DiffChanged, Path: path, Old: o, New: n})
}

// sameLeaf compares scalars of canonical documents (a map or list against
// anything else is a change of type).
func sameLeaf(o, n any) bool {
	switch ov := o.(type) {
	case json.Number:
		nv, ok := n.(json.Number)
		return ok && ov == nv
	case string:
		nv, ok := n.(string)
		return ok && ov == nv
	case bool:
		nv, ok := n.(bool)
		return ok && ov == nv
	case nil:
		return n == nil
	}
	return false
}

// lineDiff lists the lines removed (numbered in the old text) and added
// (numbered in the new), in the order of the texts, with difflib's
// matcher, capped at MaxDiffEntries.
//
// The lines both texts begin and end with are set aside first: a config
// edit is usually local, and the matcher's cost grows with the lines it
// is given. When what remains is still over maxMatchedLines on a side, the
// diff is not computed at all (empty, cut): the matcher could take
// seconds, outside the policy's deadline.
func lineDiff(old, new string) ([]DiffEntry, bool) {
	a, b := splitLines(old), splitLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	a, b = a[pre:len(a)-suf], b[pre:len(b)-suf]
	out := []DiffEntry{}
	if len(a) > maxMatchedLines || len(b) > maxMatchedLines {
		return out, true
	}
	m := difflib.NewMatcher(a, b)
	for _, op := range m.GetOpCodes() {
		if op.Tag == 'e' {
			continue
		}
		for i := op.I1; i < op.I2; i++ {
			if len(out) >= MaxDiffEntries {
				return out, true
			}
			out = append(out, DiffEntry{Op: DiffRemoved, Line: pre + i + 1, Text: a[i]})
		}
		for j := op.J1; j < op.J2; j++ {
			if len(out) >= MaxDiffEntries {
				return out, true
			}
			out = append(out, DiffEntry{Op: DiffAdded, Line: pre + j + 1, Text: b[j]})
		}
	}
	return out, false
}

// maxMatchedLines bounds the lines of a side the matcher compares, after
// the common beginning and end are set aside.
const maxMatchedLines = 20000

// splitLines splits text into lines without their line ends; a final
// newline ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
