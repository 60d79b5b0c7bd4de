package render

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

// ConfigCache keeps parsed MachineConfigs: parsing and validating Ignition
// is most of a plan's cost, and the same rendered configs are planned again
// at every policy change (and previewed at every admission request). A
// config is identified by UID and generation, so status writes (plans) do
// not invalidate it. It is safe for concurrent use.
type ConfigCache struct {
	mu      sync.Mutex
	max     int
	entries map[configKey]*machineconfig.Config
	order   []configKey // insertion order, oldest first
}

type configKey struct {
	uid        types.UID
	generation int64
}

// NewConfigCache keeps up to max parsed configs, evicting the oldest.
func NewConfigCache(max int) *ConfigCache {
	return &ConfigCache{max: max, entries: map[configKey]*machineconfig.Config{}}
}

// Get returns the parsed config, parsing it on a miss. Parsed configs are
// shared and must not be modified.
func (c *ConfigCache) Get(mc *ndpmcv1.MachineConfig) (*machineconfig.Config, error) {
	key := configKey{mc.UID, mc.Generation}
	c.mu.Lock()
	cfg, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return cfg, nil
	}
	cfg, err := machineconfig.New(mc.Name, mc.Spec)
	if err != nil {
		return nil, err
	}
	if raw := mc.Annotations[ndpmcv1.SourcesAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &cfg.Sources) // sources only enrich the input
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = cfg
		c.order = append(c.order, key)
		for len(c.order) > c.max {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	return c.entries[key], nil
}
