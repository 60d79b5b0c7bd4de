// Package alertsilence keeps an Alertmanager silence for each node ndp
// disrupts on purpose (a RolloutPolicy's spec.silences): Decide says, from
// the node's ndp.dev/silence annotation (Record) and whether the node is
// being disrupted now, whether to create, extend or expire its silence;
// Silence builds the silence from the administrator's matchers with the
// node's name; Client posts and expires it through Alertmanager's v2 API.
// The decisions are pure; the reconciler (controllers/executor) reads the
// node, calls them, and writes the annotation.
//
// The wire types are Alertmanager's own (api/v2/models) and the matchers
// are parsed by its own parser (pkg/labels); the calls go through
// client_golang's API client, as rolloutgates' Alertmanager gate does:
// Alertmanager's generated client (api/v2/client) would add go-openapi's
// runtime and OpenTelemetry to ndp's build for two requests.
//
// It stands on apis and rolloutgates (its HTTP client and error wording):
// level 3 of docs/design.md's import rule.
package alertsilence
