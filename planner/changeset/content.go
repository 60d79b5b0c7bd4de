package changeset

import (
	"fmt"
	"sync"
)

// Limits on the file contents a change set carries for policies. Contents
// are held decoded in the planner's memory and, when a policy reads them,
// converted to Rego values (several times their size): the limits keep a
// plan inside the sandbox's memory budget whatever the configs hold.
const (
	// MaxContentBytes: a side of a file larger than this (decoded) has no
	// text or data.
	MaxContentBytes = 1 << 20
	// ContentBudgetBytes: the decoded bytes of all files' sides a change
	// set keeps; files past it have no text or data.
	ContentBudgetBytes = 16 << 20
	// MaxDiffEntries caps a change's diff (diffTruncated is then set).
	MaxDiffEntries = 10000
)

// Content formats: how a side of a file was read.
const (
	FormatJSON   = "json"
	FormatYAML   = "yaml"
	FormatTOML   = "toml"
	FormatText   = "text"
	FormatBinary = "binary"
	// FormatUnknown: the contents were not inspected (remote source, too
	// large, over the change set's budget).
	FormatUnknown = "unknown"
)

// Diff entry operations (data leaves and text lines).
const (
	DiffAdded   = "added"
	DiffRemoved = "removed"
	DiffChanged = "changed"
)

// Content is one side of a file change's contents, as policies read it in
// change.old and change.new.
type Content struct {
	Format string `json:"format"`
	// Size in decoded bytes; nil for a remote source.
	Size *int `json:"size,omitempty"`
	// Text, when the contents are UTF-8 without NUL bytes and within the
	// limits.
	Text *string `json:"text,omitempty"`
	// Data is the parsed document (json, yaml, toml): map[string]any,
	// []any, string, json.Number, bool or nil, so that it converts to Rego
	// as JSON would. Numbers are canonical: YAML 250 and JSON 250.0 are
	// the same json.Number.
	Data any `json:"data,omitempty"`
	// Omitted says why Text (or Data) is absent.
	Omitted string `json:"omitted,omitempty"`
}

// DiffEntry is one difference between the two sides of a file: a leaf of
// the parsed documents (Path, Old, New) or a line of text (Line, Text).
type DiffEntry struct {
	Op string `json:"op"`
	// Path to a leaf: map keys (string) and list indices (int).
	Path []any `json:"path,omitempty"`
	// Old is absent (nil) for an added leaf, New for a removed one; a
	// changed leaf has both, possibly null.
	Old any `json:"old,omitempty"`
	New any `json:"new,omitempty"`
	// Line is 1-based, in the new text for an added line, in the old text
	// for a removed one.
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
}

// Data reports whether e is a leaf of parsed documents (else a text line).
func (e *DiffEntry) Data() bool { return e.Line == 0 }

// ContentChange is what a file change carries about its contents: both
// sides (Old is nil for an added file, New for a removed one) and, for a
// changed file, the diff: of the parsed documents when both sides have
// data, else of the lines when both have text, else none.
type ContentChange struct {
	Old, New *Content
	Diff     []DiffEntry
	// DataDiff: Diff compares parsed documents (else lines, or nothing).
	DataDiff      bool
	DiffTruncated bool
}

// contentStore holds the decoded contents of the change set's file
// changes, kept by Diff (which decodes them anyway, for the digests), and
// their parsed form, computed on first use: planning with policies that
// never read contents parses nothing.
type contentStore struct {
	mu     sync.Mutex
	budget int // bytes left
	raw    map[string]*[2]rawSide
	parsed map[string]*ContentChange
}

// rawSide is one side of a file as Diff saw it.
type rawSide struct {
	present bool
	data    []byte // kept within the limits, else nil
	size    int    // -1: a remote source
	omitted string
}

func newContentStore() *contentStore {
	return &contentStore{budget: ContentBudgetBytes, raw: map[string]*[2]rawSide{}, parsed: map[string]*ContentChange{}}
}

// keep records one side (0 old, 1 new) of a file change. data is the
// decoded contents; remote means the source is not a data URL.
func (s *contentStore) keep(id string, side int, data []byte, remote bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A new pair each time: a Copy of the change set shares the old one.
	r := &[2]rawSide{}
	if prev := s.raw[id]; prev != nil {
		*r = *prev
	}
	s.raw[id] = r
	rs := rawSide{present: true, size: len(data)}
	switch {
	case remote:
		rs.size, rs.omitted = -1, "remote source (contents not in the config)"
	case len(data) > MaxContentBytes:
		rs.omitted = fmt.Sprintf("larger than %s", formatBytes(MaxContentBytes))
	case len(data) > s.budget:
		rs.omitted = fmt.Sprintf("over the change set's content budget of %s", formatBytes(ContentBudgetBytes))
	default:
		s.budget -= len(data)
		rs.data = data
	}
	r[side] = rs
	delete(s.parsed, id)
}

// AttachContents gives a file change of the set its old and new contents
// (nil for a missing side), under the same limits as Diff: for change sets
// built by hand, such as the probe's.
func (cs *ChangeSet) AttachContents(id string, old, new []byte) {
	if cs.contents == nil {
		cs.contents = newContentStore()
	}
	if old != nil {
		cs.contents.keep(id, 0, old, false)
	}
	if new != nil {
		cs.contents.keep(id, 1, new, false)
	}
}

// Contents is the content of a file change: its sides parsed and, for a
// changed file, diffed. Nil when the change carries none: not a file, a
// change of mode or owner only, or a change set built without contents.
// The result is computed once and shared: do not modify it.
func (cs *ChangeSet) Contents(id string) *ContentChange {
	s := cs.contents
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cc, ok := s.parsed[id]; ok {
		return cc
	}
	r := s.raw[id]
	if r == nil {
		return nil
	}
	path := ""
	if c := cs.Change(id); c != nil {
		path = c.Path
	}
	cc := &ContentChange{}
	if r[0].present {
		cc.Old = inspect(path, r[0])
	}
	if r[1].present {
		cc.New = inspect(path, r[1])
	}
	if cc.Old != nil && cc.New != nil {
		diffContents(cc)
	}
	s.parsed[id] = cc
	return cc
}

// Copy is a copy of the change set whose changes (and attached contents)
// can be changed without touching cs. Contents already kept are shared:
// they are never modified.
func (cs *ChangeSet) Copy() *ChangeSet {
	out := *cs
	out.Changes = append([]Change(nil), cs.Changes...)
	if s := cs.contents; s != nil {
		s.mu.Lock()
		c := &contentStore{budget: s.budget, raw: make(map[string]*[2]rawSide, len(s.raw)), parsed: make(map[string]*ContentChange, len(s.parsed))}
		for k, v := range s.raw {
			c.raw[k] = v
		}
		for k, v := range s.parsed {
			c.parsed[k] = v
		}
		s.mu.Unlock()
		out.contents = c
	}
	return &out
}

func formatBytes(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
