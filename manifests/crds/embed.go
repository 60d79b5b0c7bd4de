// Package crds holds openshift/api's CRDs that ndp installs or reads
// (openshift/*.yaml, copied from the pinned module by `make generate`),
// embedded so that a binary can check an object with the API server's own
// schema and rules, offline and without the repository at hand.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"sigs.k8s.io/yaml"
)

// The copies, not the module's files: the module cache is not there at
// run time, and these are what the install applies.
//
//go:embed openshift/*.yaml
var openshift embed.FS

// File is the CRD file of that base name under manifests/crds/openshift,
// e.g. "0000_80_machine-config_01_machineconfigurations-Default.crd.yaml".
func File(name string) ([]byte, error) {
	b, err := fs.ReadFile(openshift, "openshift/"+name)
	if err != nil {
		return nil, fmt.Errorf("no embedded CRD file %q: %w", name, err)
	}
	return b, nil
}

// byName maps each CRD's metadata.name to its file, read once: the names
// are in the files, not in their names (which carry feature sets and
// run levels).
var byName = sync.OnceValues(func() (map[string]string, error) {
	entries, err := fs.ReadDir(openshift, "openshift")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, e := range entries {
		b, err := fs.ReadFile(openshift, "openshift/"+e.Name())
		if err != nil {
			return nil, err
		}
		var crd struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("embedded CRD file %s: %w", e.Name(), err)
		}
		if prev, ok := m[crd.Metadata.Name]; ok {
			// Two feature sets of one CRD: which one is meant must be said by file.
			return nil, fmt.Errorf("embedded CRD %s is in both %s and %s", crd.Metadata.Name, prev, e.Name())
		}
		m[crd.Metadata.Name] = e.Name()
	}
	return m, nil
})

// ByName is the embedded CRD whose metadata.name is name, e.g.
// "machineconfigurations.operator.openshift.io", and its file's base name.
func ByName(name string) (data []byte, file string, err error) {
	m, err := byName()
	if err != nil {
		return nil, "", err
	}
	file, ok := m[name]
	if !ok {
		return nil, "", fmt.Errorf("no embedded CRD named %s", name)
	}
	data, err = File(file)
	return data, file, err
}
