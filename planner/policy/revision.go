package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// engineFormat versions how policies become plans; it is part of every
// policy revision, so plans are recomputed when it changes.
const engineFormat = "ndp-engine/v1"

// Revision digests everything that decides a plan: the engine format, the
// library and each policy's name, priority, entries and Rego.
func Revision(pols []Policy, lib []Module) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(engineFormat)
	for _, m := range lib {
		_ = enc.Encode(m.Source)
	}
	for _, p := range pols {
		_ = enc.Encode([]any{p.Name, p.Priority, p.PoolSelector, p.Files, p.Units, p.SSHKey})
		for _, m := range p.Modules {
			_ = enc.Encode(m.Source)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
