package mcoimport_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
)

// change is one change between two rendered configs, of one kind.
type change struct {
	file, from, to   string // a file and its old and new contents
	unit             string
	sshkey, password bool
}

func (c change) String() string {
	switch {
	case c.file != "":
		return "file " + c.file
	case c.unit != "":
		return "unit " + c.unit
	case c.sshkey:
		return "sshkey"
	}
	return "password"
}

// configs are the rendered configs before and after the change.
func (c change) configs(t *testing.T) (from, to *machineconfig.Config) {
	t.Helper()
	doc := func(name string, version int) *machineconfig.Config {
		mc := builder.MachineConfig(name)
		user := builder.Entry{"name": "core", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOne core@example.com"}}
		switch {
		case c.file != "":
			contents := c.from
			if version == 1 {
				contents = c.to
			}
			if contents == "" {
				contents = []string{"old", "new"}[version]
			}
			mc.WithFiles(builder.File(c.file, contents).With("mode", 420).With("overwrite", true))
		case c.unit != "":
			mc.WithEntries("systemd", "units", builder.Unit(c.unit,
				[]string{"[Service]\nExecStart=/bin/true\n", "[Service]\nExecStart=/bin/false\n"}[version]+"[Install]\nWantedBy=multi-user.target\n").With("enabled", true))
		case c.sshkey && version == 1:
			user = user.With("sshAuthorizedKeys", []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyTwo core@example.com"})
		case c.password:
			user = user.With("passwordHash", []string{"$6$old$hash", "$6$new$hash"}[version])
		}
		return mc.WithEntries("passwd", "users", user).Config(t)
	}
	return doc("rendered-worker-a", 0), doc("rendered-worker-b", 1)
}

// planOf is the plan for the change with the given policies.
func planOf(t *testing.T, p *planner.Planner, c change) *planner.Plan {
	t.Helper()
	from, to := c.configs(t)
	pl, err := p.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	if len(pl.Reasons) != 1 {
		t.Fatalf("%s: want one change, the plan has %+v", c, pl.Reasons)
	}
	return pl
}

// registries.conf contents (testdata/): a digest-only mirror; a second one
// added (safe: reload, no drain); the mirror removed (unsafe: drain).
var (
	registriesBase          = testdata("registries-base.conf")
	registriesMirrorAdded   = testdata("registries-mirror-added.conf")
	registriesMirrorRemoved = testdata("registries-mirror-removed.conf")
)

func testdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}
