package changeset_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner/changeset"
)

func ptr[T any](v T) *T { return &v }

// contentsOf diffs a config without the file against one with f, or, with
// old, a config with old against one with f, and returns the file's
// contents.
func contentsOf(t *testing.T, path string, old, new *builder.Entry) *changeset.ContentChange {
	t.Helper()
	from, to := builder.MachineConfig("old"), builder.MachineConfig("new")
	if old != nil {
		from.WithFiles(*old)
	}
	if new != nil {
		to.WithFiles(*new)
	}
	cs := diff(t, from.Config(t), to.Config(t))
	return cs.Contents("file:" + path)
}

func fileEntry(path, contents string) *builder.Entry {
	e := builder.File(path, contents)
	return &e
}

func TestContentFormats(t *testing.T) {
	large := strings.Repeat("a", changeset.MaxContentBytes+1)
	for _, tc := range []struct {
		name, path, contents string
		source               string // instead of contents
		want                 changeset.Content
	}{
		{name: "json object", path: "/etc/kubernetes/kubelet.conf", contents: `{"maxPods": 250, "x": [true, null, 2.50, 1e2]}`,
			want: changeset.Content{Format: "json", Data: map[string]any{"maxPods": json.Number("250"), "x": []any{true, nil, json.Number("2.5"), json.Number("100")}}}},
		{name: "json array", path: "/etc/a.json", contents: "[1, \"a\"]\n", want: changeset.Content{Format: "json", Data: []any{json.Number("1"), "a"}}},
		{name: "json scalar is text", path: "/etc/a.json", contents: `"just a string"`, want: changeset.Content{Format: "text"}},
		{name: "json with trailing data is not json", path: "/etc/a", contents: `{"a": 1} {"b": 2}`, want: changeset.Content{Format: "text"}},
		{name: "yaml map", path: "/etc/kubernetes/kubelet.conf", contents: "maxPods: 250\nsystemReserved:\n  cpu: 500m\nfeatureGates: [A, B]\n",
			want: changeset.Content{Format: "yaml", Data: map[string]any{"maxPods": json.Number("250"), "systemReserved": map[string]any{"cpu": "500m"}, "featureGates": []any{"A", "B"}}}},
		{name: "yaml list", path: "/etc/a", contents: "- a\n- 2\n", want: changeset.Content{Format: "yaml", Data: []any{"a", json.Number("2")}}},
		{name: "yaml scalar is text", path: "/etc/chrony.conf", contents: "server time.example.com iburst\ndriftfile /var/lib/chrony/drift\n", want: changeset.Content{Format: "text"}},
		{name: "yaml with several documents is text", path: "/etc/a.yaml", contents: "a: 1\n---\nb: 2\n", want: changeset.Content{Format: "text"}},
		{name: "invalid yaml is text", path: "/etc/a.yaml", contents: "a: [1\nb: }\n", want: changeset.Content{Format: "text"}},
		{name: "toml drop-in", path: "/etc/crio/crio.conf.d/01-pids.conf", contents: "[crio.runtime]\npids_limit = 2048\n",
			want: changeset.Content{Format: "toml", Data: map[string]any{"crio": map[string]any{"runtime": map[string]any{"pids_limit": json.Number("2048")}}}}},
		{name: "toml without extension, datetimes as strings", path: "/etc/containers/registries.conf",
			contents: "unqualified-search-registries = [\"quay.io\"]\nat = 1979-05-27T07:32:00Z\nday = 1979-05-27\nratio = 0.5\n[[registry]]\nlocation = \"quay.io/x\"\n",
			want: changeset.Content{Format: "toml", Data: map[string]any{"unqualified-search-registries": []any{"quay.io"}, "at": "1979-05-27T07:32:00Z", "day": "1979-05-27",
				"ratio": json.Number("0.5"), "registry": []any{map[string]any{"location": "quay.io/x"}}}}},
		{name: "a table without keys is not toml (here a yaml list)", path: "/etc/a.conf", contents: "[Unit]\n", want: changeset.Content{Format: "yaml", Data: []any{"Unit"}}},
		{name: "systemd unit is text", path: "/etc/systemd/system/a.service", contents: "[Unit]\nDescription=A service\n\n[Service]\nExecStart=/usr/bin/true\n", want: changeset.Content{Format: "text"}},
		{name: "systemd drop-in is text", path: "/etc/systemd/system/kubelet.service.d/10-x.conf", contents: "[Service]\nEnvironment=\"A=1\"\nExecStart=\nExecStart=/usr/bin/kubelet\n", want: changeset.Content{Format: "text"}},
		{name: "sysconfig is text", path: "/etc/sysconfig/crio", contents: "CRIO_OPTS=--log-level=debug\n", want: changeset.Content{Format: "text"}},
		{name: "empty", path: "/etc/empty", contents: "", want: changeset.Content{Format: "text"}},
		{name: "binary with NUL", path: "/usr/local/bin/x", contents: "\x7fELF\x00\x01", want: changeset.Content{Format: "binary", Omitted: "binary contents (NUL bytes)"}},
		{name: "not UTF-8", path: "/etc/latin1", contents: "caf\xe9\n", want: changeset.Content{Format: "binary", Omitted: "binary contents (not UTF-8)"}},
		{name: "too large", path: "/etc/large", contents: large, want: changeset.Content{Format: "unknown", Omitted: "larger than 1 MiB"}},
		{name: "remote source", path: "/etc/remote", source: "https://example.com/x.json", want: changeset.Content{Format: "unknown", Omitted: "remote source (contents not in the config)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := builder.File(tc.path, tc.contents)
			if tc.source != "" {
				f = builder.FileSource(tc.path, tc.source)
			}
			cc := contentsOf(t, tc.path, nil, &f)
			if cc == nil || cc.Old != nil || cc.New == nil || cc.Diff != nil {
				t.Fatalf("contents of an added file: %+v, want only New", cc)
			}
			want := tc.want
			if tc.source == "" {
				want.Size = ptr(len(tc.contents))
			}
			if want.Omitted == "" {
				want.Text = ptr(tc.contents)
			}
			if d := cmp.Diff(&want, cc.New); d != "" {
				t.Errorf("contents (-want +got):\n%s", d)
			}
		})
	}
}

func TestContentDataDiff(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		old, new   string
		want       []changeset.DiffEntry
		truncated  bool
	}{
		{name: "nested maps", path: "/etc/a.json", old: `{"a": {"b": 1, "c": "x", "gone": true}, "z": 1}`, new: `{"a": {"b": 2, "c": "x", "d": null}, "z": 1, "added": {"k": [1]}}`,
			want: []changeset.DiffEntry{
				{Op: "changed", Path: []any{"a", "b"}, Old: json.Number("1"), New: json.Number("2")},
				{Op: "added", Path: []any{"a", "d"}, New: nil},
				{Op: "removed", Path: []any{"a", "gone"}, Old: true},
				{Op: "added", Path: []any{"added"}, New: map[string]any{"k": []any{json.Number("1")}}},
			}},
		{name: "list grown", path: "/etc/a.json", old: `{"l": [1, 2]}`, new: `{"l": [1, 3, {"x": 1}]}`,
			want: []changeset.DiffEntry{
				{Op: "changed", Path: []any{"l", 1}, Old: json.Number("2"), New: json.Number("3")},
				{Op: "added", Path: []any{"l", 2}, New: map[string]any{"x": json.Number("1")}},
			}},
		{name: "list shrunk", path: "/etc/a.json", old: `[1, 2, 3]`, new: `[1]`,
			want: []changeset.DiffEntry{{Op: "removed", Path: []any{1}, Old: json.Number("2")}, {Op: "removed", Path: []any{2}, Old: json.Number("3")}}},
		{name: "type change is one leaf", path: "/etc/a.json", old: `{"a": {"b": 1}}`, new: `{"a": [1]}`,
			want: []changeset.DiffEntry{{Op: "changed", Path: []any{"a"}, Old: map[string]any{"b": json.Number("1")}, New: []any{json.Number("1")}}}},
		{name: "number and string differ", path: "/etc/a.json", old: `{"a": 1}`, new: `{"a": "1"}`,
			want: []changeset.DiffEntry{{Op: "changed", Path: []any{"a"}, Old: json.Number("1"), New: "1"}}},
		{name: "whole document type", path: "/etc/a.json", old: `{"a": 1}`, new: `[1]`,
			want: []changeset.DiffEntry{{Op: "changed", Path: []any{}, Old: map[string]any{"a": json.Number("1")}, New: []any{json.Number("1")}}}},
		{name: "yaml and json of equal values", path: "/etc/kubernetes/kubelet.conf", old: "maxPods: 250\nratio: 1.0\nlist: [a, b]\n", new: `{"list": ["a", "b"], "ratio": 1, "maxPods": 250.0}`,
			want: []changeset.DiffEntry{}},
		{name: "toml and yaml", path: "/etc/a.conf", old: "[a]\nb = 2048\n", new: "a:\n  b: 4096\n",
			want: []changeset.DiffEntry{{Op: "changed", Path: []any{"a", "b"}, Old: json.Number("2048"), New: json.Number("4096")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := contentsOf(t, tc.path, fileEntry(tc.path, tc.old), fileEntry(tc.path, tc.new))
			if cc == nil || !cc.DataDiff {
				t.Fatalf("contents %+v, want a data diff", cc)
			}
			if d := cmp.Diff(tc.want, cc.Diff); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
}

func TestContentDiffTruncated(t *testing.T) {
	var o, n []string
	for i := range changeset.MaxDiffEntries + 5 {
		o, n = append(o, fmt.Sprint(i)), append(n, fmt.Sprint(i+1))
	}
	data := contentsOf(t, "/etc/a.json", fileEntry("/etc/a.json", "["+strings.Join(o, ",")+"]"), fileEntry("/etc/a.json", "["+strings.Join(n, ",")+"]"))
	text := contentsOf(t, "/etc/a", fileEntry("/etc/a", "old "+strings.Join(o, "\nold ")), fileEntry("/etc/a", "new "+strings.Join(n, "\nnew ")))
	for name, cc := range map[string]*changeset.ContentChange{"data": data, "text": text} {
		if len(cc.Diff) != changeset.MaxDiffEntries || !cc.DiffTruncated {
			t.Errorf("%s: %d entries, truncated %t; want %d, true", name, len(cc.Diff), cc.DiffTruncated, changeset.MaxDiffEntries)
		}
	}
}

// wantTextDiff checks that cc is a line diff, complete, of the entries
// want.
func wantTextDiff(t *testing.T, cc *changeset.ContentChange, want ...changeset.DiffEntry) {
	t.Helper()
	if cc == nil || cc.DataDiff || cc.DiffTruncated {
		t.Fatalf("contents %+v, want a complete text diff", cc)
	}
	if d := cmp.Diff(want, cc.Diff); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
}

func TestContentTextDiff(t *testing.T) {
	old := "# chrony\nserver a iburst\nserver b iburst\ndriftfile /var/lib/chrony/drift\n"
	new := "# chrony\nserver a iburst\nserver c iburst\nserver d iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n"
	wantTextDiff(t, contentsOf(t, "/etc/chrony.conf", fileEntry("/etc/chrony.conf", old), fileEntry("/etc/chrony.conf", new)),
		changeset.DiffEntry{Op: "removed", Line: 3, Text: "server b iburst"},
		changeset.DiffEntry{Op: "added", Line: 3, Text: "server c iburst"},
		changeset.DiffEntry{Op: "added", Line: 4, Text: "server d iburst"},
		changeset.DiffEntry{Op: "added", Line: 6, Text: "makestep 1.0 3"})
	// Text on one side, binary on the other: no diff.
	cc := contentsOf(t, "/etc/x", fileEntry("/etc/x", "a\n"), fileEntry("/etc/x", "a\x00"))
	if cc == nil || cc.Diff != nil || cc.New.Format != "binary" {
		t.Errorf("text → binary: %+v, want no diff", cc)
	}
}

// A large text: the common beginning and end are set aside (line numbers
// stay the texts' own), and a change spread over more lines than the
// matcher is given is cut, not computed.
func TestContentTextDiffOfLargeFiles(t *testing.T) {
	var lines []string
	for i := range 40000 {
		lines = append(lines, fmt.Sprintf("option%d = %d", i, i))
	}
	text := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	local := slices.Clone(lines)
	local[30000] = "option30000 = changed"
	wantTextDiff(t, contentsOf(t, "/etc/big.conf", fileEntry("/etc/big.conf", text(lines)), fileEntry("/etc/big.conf", text(local))),
		changeset.DiffEntry{Op: "removed", Line: 30001, Text: "option30000 = 30000"},
		changeset.DiffEntry{Op: "added", Line: 30001, Text: "option30000 = changed"})
	spread := slices.Clone(lines)
	spread[0], spread[len(spread)-1] = "first changed", "last changed"
	cc := contentsOf(t, "/etc/big.conf", fileEntry("/etc/big.conf", text(lines)), fileEntry("/etc/big.conf", text(spread)))
	if cc == nil || !cc.DiffTruncated || len(cc.Diff) != 0 {
		t.Errorf("a change spread over 40,000 lines: %d entries, truncated %t; want none, cut", len(cc.Diff), cc.DiffTruncated)
	}
}

func TestContentsOnlyForContentChanges(t *testing.T) {
	old := builder.MachineConfig("old").WithFiles(builder.File("/etc/a", "x"), builder.File("/etc/b", "x"), builder.File("/etc/gone", "{}")).Config(t)
	new := builder.MachineConfig("new").WithFiles(builder.File("/etc/a", "x").With("mode", 0o600), builder.FileB64("/etc/b", "x")).Config(t)
	cs := diff(t, old, new)
	if len(cs.Changes) != 2 {
		t.Fatalf("changes %+v, want /etc/a (mode) and /etc/gone", cs.Changes)
	}
	if cc := cs.Contents("file:/etc/a"); cc != nil {
		t.Errorf("a change of mode only carries contents %+v", cc)
	}
	if cc := cs.Contents("file:/etc/gone"); cc == nil || cc.New != nil || cc.Old == nil || cc.Old.Format != "json" {
		t.Errorf("removed file: contents %+v, want only Old (json)", cc)
	}
	none, err := changeset.DiffWith(old, new, changeset.Options{NoContents: true})
	if err != nil {
		t.Fatal(err)
	}
	if cc := none.Contents("file:/etc/gone"); cc != nil {
		t.Errorf("NoContents: contents %+v", cc)
	}
}

func TestContentBudget(t *testing.T) {
	// Gzip keeps the configs small; each file is 1 MiB decoded, the most
	// one side may hold, so the budget holds 16 of them.
	mib := strings.Repeat("a", changeset.MaxContentBytes)
	n := changeset.ContentBudgetBytes/changeset.MaxContentBytes + 2
	to := builder.MachineConfig("new")
	for i := range n {
		to.WithFiles(builder.FileGzip(fmt.Sprintf("/etc/f%02d", i), mib))
	}
	cs := diff(t, builder.MachineConfig("old").Config(t), to.Config(t))
	kept := 0
	for _, c := range cs.Changes {
		cc := cs.Contents(c.ID)
		switch {
		case cc.New.Text != nil:
			kept++
		case cc.New.Omitted != "over the change set's content budget of 16 MiB" || cc.New.Format != "unknown" || *cc.New.Size != len(mib):
			t.Errorf("%s: %+v, want omitted for the budget", c.ID, cc.New)
		}
	}
	if want := changeset.ContentBudgetBytes / changeset.MaxContentBytes; kept != want {
		t.Errorf("%d files with text, want %d", kept, want)
	}
}

func TestCopyKeepsContentsApart(t *testing.T) {
	cs := diff(t, builder.MachineConfig("old").WithFiles(builder.File("/etc/a", "{\"a\": 1}")).Config(t),
		builder.MachineConfig("new").WithFiles(builder.File("/etc/a", "{\"a\": 2}")).Config(t))
	cp := cs.Copy()
	cp.Changes = append(cp.Changes, changeset.Change{ID: "file:/etc/b", Kind: "file", Op: "changed", Path: "/etc/b"})
	cp.AttachContents("file:/etc/b", []byte("x: 1\n"), []byte("x: 2\n"))
	cp.AttachContents("file:/etc/a", []byte("a: 3\n"), nil)
	if cc := cs.Contents("file:/etc/b"); cc != nil {
		t.Errorf("the original sees the copy's contents: %+v", cc)
	}
	if d := cmp.Diff([]changeset.DiffEntry{{Op: "changed", Path: []any{"a"}, Old: json.Number("1"), New: json.Number("2")}}, cs.Contents("file:/etc/a").Diff); d != "" {
		t.Errorf("the original's diff changed (-want +got):\n%s", d)
	}
	if cc := cp.Contents("file:/etc/b"); cc == nil || len(cc.Diff) != 1 {
		t.Errorf("attached contents: %+v, want one changed leaf", cc)
	}
}
