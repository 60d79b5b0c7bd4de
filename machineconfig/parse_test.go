package machineconfig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
)

func TestParseMachineConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"empty", "  \n", []string{"x.yaml", "empty document"}},
		{"malformed YAML", "kind: MachineConfig\nspec:\n  config: [\n", []string{"x.yaml", "line ", "malformed YAML"}},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", []string{"x.yaml", "kind", "ConfigMap"}},
		{"Ignition 2", "kind: MachineConfig\nmetadata: {name: m}\nspec:\n  config: {ignition: {version: 2.2.0}}\n", []string{`x.yaml: MachineConfig "m"`, "spec.config", "unsupported config version"}},
		{"future Ignition", "kind: MachineConfig\nmetadata: {name: m}\nspec:\n  config: {ignition: {version: 3.9.0}}\n", []string{"spec.config", "unsupported config version"}},
		{"invalid Ignition", "kind: MachineConfig\nmetadata: {name: m}\nspec:\n  config: {ignition: {version: 3.4.0}, storage: {files: [{path: relative/path}]}}\n", []string{"spec.config", "absolute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := machineconfig.Parse("x.yaml", []byte(tc.doc))
			var ie *machineconfig.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an InputError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseJSONMachineConfig(t *testing.T) {
	doc := builder.MachineConfig("j").WithFiles(builder.File("/etc/a", "a")).WithSpecFields(map[string]any{"osImageURL": "quay.io/os@sha256:1"}).Document()
	cfg, err := machineconfig.Parse("j.json", doc)
	if err != nil || cfg.Name != "j" || cfg.Spec.OSImageURL != "quay.io/os@sha256:1" || len(cfg.Ignition.Storage.Files) != 1 {
		t.Fatalf("parsed %+v, %v", cfg, err)
	}
	_, err = machineconfig.Parse("bad.json", []byte("{\n  \"kind\": \"MachineConfig\",\n  \"spec\": {\"osImageURL\": 3}\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.json: line 3") || !strings.Contains(err.Error(), "malformed JSON") {
		t.Errorf("type error: %v", err)
	}
	_, err = machineconfig.Parse("bad.json", []byte("{\n  \"kind\": \"MachineConfig\",\n  \"spec\": }\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.json: line 3") {
		t.Errorf("syntax error: %v", err)
	}
}
