package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/test/framework"
)

// aptOnVMs: a real apt update from a package repository on each worker VM
// (framework/aptrepo.go), its source a MachineConfig the default policy
// plans as a package update. A new snapshot whose upgrade needs a service
// restarted: needrestart names it, ndp-daemon restarts it once per node, no
// cordon, no reboot. The next, whose package asks for a reboot: each node
// cordoned, drained and rebooted once, the pool's budget raised to both
// workers at once; `kubectl ndp why` names the packages and who asked.
func (s *suite) aptOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("The nodes' provisioning: a package repository on each worker VM (ndp-demo and ndp-demo-kernel in three snapshots, built here with dpkg-deb), snapshot-1 installed, ndp-demo.service started")
	if err := c.ProvisionAptRepo(ctx); err != nil {
		t.Fatal(err)
	}

	c.Step("%s: apt's source at snapshot-2 (ndp-demo 2.0), a package update; needrestart names ndp-demo.service: restarted once per node, no cordon, no reboot", framework.AptMachineConfig)
	mc := c.Path(framework.AptMachineConfig + ".yaml")
	if err := os.WriteFile(mc, []byte(framework.AptSourcesMC(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "PackageUpdate, no drain, no reboot"
	preview, err := c.KubectlMust("apply", "--dry-run=server", "-f", mc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preview, want) {
		t.Fatalf("the dry-run did not preview %q:\n%s", want, preview)
	}
	c.Report("apt source preview: " + framework.FirstLine(preview, "Warning:"))
	before, err := c.StartsOnWorkers(ctx, framework.DemoService)
	if err != nil {
		t.Fatal(err)
	}
	current, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.SourcesNow()
	if _, err := c.KubectlMust("apply", "-f", mc); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(ctx, current, sources+1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWorkersUncordoned(ctx, target, "a package update that needs a restart only"); err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Workers {
		version, err := c.PackageVersion(ctx, w, framework.DemoPackage)
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.Starts(ctx, w, framework.DemoService)
		if err != nil {
			t.Fatal(err)
		}
		boot, err := w.VM.BootID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		why, err := c.WhyPackages(ctx, w.Name, target, "restarted "+framework.DemoService+" (needrestart)")
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s: ndp-demo %s; ndp-demo.service started %d time(s) by the update; boot %s (unchanged: %t); why: %s",
			w.Name, version, n-before[w.Name], boot[:8], boot == w.BootNow, why)
		fmt.Println(line)
		c.Report(line)
		if version != "2.0" || n-before[w.Name] != 1 || boot != w.BootNow {
			t.Fatalf("%s: want ndp-demo 2.0, ndp-demo.service started once, the same boot", w.Name)
		}
	}

	// Both workers at once: a reboot each for the price of one. The
	// budget is still checked: both out together, no more.
	const budget = 2
	oldBudget, err := c.KubectlMust("get", "mcp", "worker", "-o", "jsonpath={.spec.maxUnavailable}")
	if err != nil {
		t.Fatal(err)
	}
	c.Step("%s at snapshot-3 (ndp-demo-kernel 2.0, whose postinst asks for a reboot), the pool's maxUnavailable %d: each node cordoned, drained, rebooted once", framework.AptMachineConfig, budget)
	if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"maxUnavailable":%d}}`, budget)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The scenarios after this one count on the pool's own budget.
		if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"maxUnavailable":%s}}`, budgetJSON(oldBudget))); err != nil {
			t.Error(err)
		}
	}()
	boots := map[string]int{}
	for _, w := range c.Workers {
		if boots[w.Name], err = c.BootCount(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(mc, []byte(framework.AptSourcesMC(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("apply", "-f", mc); err != nil {
		t.Fatal(err)
	}
	watch := c.WatchWorkers(ctx)
	defer watch()
	start := time.Now()
	previous := target
	if target, err = c.WaitTargetSources(ctx, previous, sources+1); err != nil {
		t.Fatal(err)
	}
	err = c.WaitWorkersDone(ctx, target, nil)
	seen := watch()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, w := range c.Workers {
		b, err := c.BootCount(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		boot, err := w.VM.BootID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		version, err := c.PackageVersion(ctx, w, framework.DemoKernelPackage)
		if err != nil {
			t.Fatal(err)
		}
		why, err := c.WhyPackages(ctx, w.Name, target, "ndp-demo-kernel 1.0 -> 2.0", "a reboot asked for by ndp-demo-kernel")
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s: ndp-demo-kernel %s; boot %s -> %s (%d boot(s) since the change, want 1); why: %s",
			w.Name, version, w.BootNow[:8], boot[:8], b-boots[w.Name], why)
		fmt.Println(line)
		c.Report(line)
		if version != "2.0" || b-boots[w.Name] != 1 || boot == w.BootNow {
			t.Fatalf("%s: want ndp-demo-kernel 2.0 and one reboot", w.Name)
		}
		w.BootNow = boot
	}
	line := fmt.Sprintf("apt reboots: %d nodes in %s, at most %d cordoned and %d out at once (maxUnavailable %d: %s)",
		len(c.Workers), took.Round(time.Second), seen.MaxCordoned, seen.MaxOut, budget, seen.Out)
	fmt.Println(line)
	c.Report(line)
	if seen.MaxOut != min(budget, len(c.Workers)) || seen.MaxCordoned > budget {
		t.Fatalf("%s: want the budget used and kept", line)
	}
}

// budgetJSON is a pool's maxUnavailable as read by jsonpath, for a patch: a
// number, or a percentage as a string.
func budgetJSON(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return "null"
	}
	if strings.HasSuffix(v, "%") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
