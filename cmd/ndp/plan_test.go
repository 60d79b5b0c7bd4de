package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// The text output shows, under each changed file, what changed inside it.
func TestPlanTextShowsInsideFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mc *builder.MachineConfigBuilder) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, mc.Document(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	from := write("old.json", builder.MachineConfig("rendered-old").WithFiles(
		builder.File("/etc/chrony.conf", "server a iburst\nserver b iburst\n"),
		builder.File("/etc/crio/crio.conf.d/01-pids.conf", "[crio.runtime]\npids_limit = 1024\n"),
		builder.File("/etc/app.json", `{"a": 1, "b": [1, 2]}`),
		builder.File("/etc/mode-only", "x"),
	))
	to := write("new.json", builder.MachineConfig("rendered-new").WithFiles(
		builder.File("/etc/chrony.conf", "server a iburst\nserver c iburst\nserver d iburst\n"),
		builder.File("/etc/crio/crio.conf.d/01-pids.conf", "[crio.runtime]\npids_limit = 2048\nlog_level = \"debug\"\n"),
		builder.File("/etc/app.json", "b: [1, 2]\na: 1\n"),
		builder.File("/etc/mode-only", "x").With("mode", 0o600),
	))
	code, out, errOut := ndp(t, "plan", "-o", "text", "--from", from, "--to", to)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  file ") || strings.HasPrefix(l, "      ") {
			got = append(got, strings.Join(strings.Fields(l), " ")) // the padding aside
		}
	}
	want := []string{
		"file /etc/app.json: contents changed no policy: Reboot -- no policy claims this change",
		"the same data (json → yaml): only formatting changed",
		"file /etc/chrony.conf: contents changed no policy: Reboot -- no policy claims this change",
		"changed lines: +2/-1",
		"file /etc/crio/crio.conf.d/01-pids.conf: contents changed no policy: Reboot -- no policy claims this change",
		"changed keys: crio (toml)",
		"changed paths: crio.runtime.log_level (added), crio.runtime.pids_limit (changed)",
		"file /etc/mode-only: mode changed no policy: Reboot -- no policy claims this change",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("text output (-want +got):\n%s\n%s", d, out)
	}
}
