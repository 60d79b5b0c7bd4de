package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

func cachedMC(uid string, gen int64) *ndpmcv1.MachineConfig {
	mc := builder.MachineConfig("rendered-"+uid).WithFile("/etc/a", "a").Build()
	mc.UID, mc.Generation, mc.Annotations = types.UID(uid), gen, map[string]string{"ndp.dev/sources": `{"file:/etc/a":"00-a"}`}
	return mc
}

func TestConfigCache(t *testing.T) {
	c := NewConfigCache(2)
	a1, err := c.Get(cachedMC("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if a1.Sources["file:/etc/a"] != "00-a" || len(a1.Ignition.Storage.Files) != 1 {
		t.Fatalf("parsed %+v", a1)
	}
	if again, _ := c.Get(cachedMC("a", 1)); again != a1 {
		t.Error("a second get of the same generation parsed again")
	}
	if next, _ := c.Get(cachedMC("a", 2)); next == a1 {
		t.Error("a new generation served the old parse")
	}
	_, _ = c.Get(cachedMC("b", 1)) // evicts a/1, the oldest
	if len(c.entries) != 2 || c.entries[configKey{"a", 1}] != nil {
		t.Errorf("cache holds %d entries, a/1 present: %t", len(c.entries), c.entries[configKey{"a", 1}] != nil)
	}
	bad := cachedMC("c", 1)
	bad.Spec.Config.Raw = []byte(`{"ignition":{"version":"2.2.0"}}`)
	if _, err := c.Get(bad); err == nil {
		t.Error("an invalid config is not an error")
	}
}
