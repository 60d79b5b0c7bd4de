package v1alpha1

import (
	"fmt"
	"strings"
	"time"
)

// A reboot a node asks for (its /var/run/reboot-required, kured's
// sentinel) goes through its pool's rollout like an update: ndp-daemon
// reports the request on the Node, the rollout controller grants it when
// the pool's budget, windows, gates, pacing and holds allow, and the
// daemon then drains and reboots the node, journaled as any update.
const (
	// RebootRequiredAnnotation is on a Node whose host asks for a reboot:
	// the request, the sentinel's modification time (RFC 3339). ndp-daemon
	// writes and removes it.
	RebootRequiredAnnotation = "ndp.dev/reboot-required"
	// RebootRequiredByAnnotation says what asked: "/var/run/reboot-required
	// (linux-image-6.1.0-18-amd64, libc6)".
	RebootRequiredByAnnotation = "ndp.dev/reboot-required-by"
	// RebootGrantAnnotation is the rollout controller's grant
	// (RebootGrant.String); ndp-daemon removes it with the reboot's Done.
	RebootGrantAnnotation = "ndp.dev/reboot-granted"
)

// RebootGrant is the rollout controller's go for the reboot a node asked
// for, with how to do it: the daemon executes it, deciding nothing.
type RebootGrant struct {
	// Request is the RebootRequiredAnnotation it grants: a newer request
	// is not granted by it.
	Request string
	// Drain: the node is cordoned and drained before the reboot.
	Drain bool
}

// String is the annotation's value: "REQUEST;drain" or "REQUEST;no-drain".
func (g RebootGrant) String() string {
	d := "drain"
	if !g.Drain {
		d = "no-drain"
	}
	return g.Request + ";" + d
}

// ParseRebootGrant reads a RebootGrantAnnotation.
func ParseRebootGrant(s string) (RebootGrant, error) {
	req, how, ok := strings.Cut(s, ";")
	if _, err := time.Parse(time.RFC3339, req); !ok || err != nil || (how != "drain" && how != "no-drain") {
		return RebootGrant{}, fmt.Errorf("%s %q: not REQUEST;drain or REQUEST;no-drain with an RFC 3339 request", RebootGrantAnnotation, s)
	}
	return RebootGrant{Request: req, Drain: how == "drain"}, nil
}
