// Package loader reads policies: NodeDisruptionPolicy YAML or JSON
// documents, .rego modules and directories of them, and OPA bundles, which
// it also builds, signs and verifies. Errors name the file, the object, the
// field and the line.
package loader
