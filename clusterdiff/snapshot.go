package clusterdiff

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoadSnapshot reads a cluster's objects from files: what `oc get
// mc,mcp,... -o yaml` prints (a List), multi-document YAML, JSON, a
// directory of such files (recursively), or an `oc adm must-gather`
// directory, of which only the directories of the kinds a diff reads are
// read. Objects of other kinds are skipped, and counted in a note.
func LoadSnapshot(paths ...string) (*Objects, []string, error) {
	d := decoder{}
	var entries []Entry
	var notes []string
	for _, p := range paths {
		files, note, err := snapshotFiles(p)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		for _, f := range files {
			es, err := d.readFile(f)
			if err != nil {
				return nil, nil, err
			}
			entries = append(entries, es...)
		}
	}
	objs, err := NewObjects(entries...)
	if err != nil {
		return nil, nil, err
	}
	if len(d.skipped) > 0 {
		kinds := slices.SortedFunc(maps.Keys(d.skipped), func(a, b string) int {
			return cmp.Or(d.skipped[b]-d.skipped[a], strings.Compare(a, b))
		})
		n := 0
		for i, k := range kinds {
			n += d.skipped[k]
			kinds[i] = fmt.Sprintf("%s (%d)", k, d.skipped[k])
		}
		notes = append(notes, fmt.Sprintf("skipped %d objects of kinds the diff does not read: %s", n, strings.Join(kinds, ", ")))
	}
	return objs, notes, nil
}

// snapshotFiles are the files of a path: a must-gather's files of the
// kinds a diff reads, or else as manifestFiles.
func snapshotFiles(p string) ([]string, string, error) {
	if st, err := os.Stat(p); p == "-" || err != nil || !st.IsDir() {
		files, err := manifestFiles(p)
		return files, "", err
	}
	roots := mustGatherRoots(p)
	if len(roots) == 0 {
		files, err := manifestFiles(p)
		return files, "", err
	}
	var files []string
	for _, root := range roots {
		for _, k := range Kinds {
			group := cmp.Or(k.Group, "core")
			if !k.Namespaced {
				files = append(files, resourceFiles(filepath.Join(root, "cluster-scoped-resources", group, k.Resource))...)
				continue
			}
			nss, _ := os.ReadDir(filepath.Join(root, "namespaces"))
			for _, ns := range nss {
				files = append(files, resourceFiles(filepath.Join(root, "namespaces", ns.Name(), group, k.Resource))...)
			}
		}
	}
	return files, fmt.Sprintf("%s is a must-gather: read %d files of the kinds the diff reads", p, len(files)), nil
}

// mustGatherRoots are the directories holding cluster-scoped-resources:
// dir itself, or the directories below it, one per must-gather image.
func mustGatherRoots(dir string) []string {
	if isDir(filepath.Join(dir, "cluster-scoped-resources")) {
		return []string{dir}
	}
	var roots []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if sub := filepath.Join(dir, e.Name()); e.IsDir() && isDir(filepath.Join(sub, "cluster-scoped-resources")) {
			roots = append(roots, sub)
		}
	}
	return roots
}

// resourceFiles are a must-gather's files of one resource: base.yaml (a
// List, as `oc adm inspect` writes a namespace's) and base/*.yaml (one
// object each, as it writes cluster-scoped ones).
func resourceFiles(base string) []string {
	var files []string
	if st, err := os.Stat(base + ".yaml"); err == nil && !st.IsDir() {
		files = append(files, base+".yaml")
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) == ".yaml" {
			files = append(files, filepath.Join(base, e.Name()))
		}
	}
	return files
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
