// Package machineconfig parses MachineConfig documents and their Ignition
// configs, and decodes file contents. The planner, render, the
// controllers' config cache and the node daemon share it: it links
// Ignition, not the policy engine.
package machineconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	ign30types "github.com/coreos/ignition/v2/config/v3_0/types"
	ign31translate "github.com/coreos/ignition/v2/config/v3_1/translate"
	ign31types "github.com/coreos/ignition/v2/config/v3_1/types"
	ign32translate "github.com/coreos/ignition/v2/config/v3_2/translate"
	ign32types "github.com/coreos/ignition/v2/config/v3_2/types"
	ign33translate "github.com/coreos/ignition/v2/config/v3_3/translate"
	ign33types "github.com/coreos/ignition/v2/config/v3_3/types"
	ign34translate "github.com/coreos/ignition/v2/config/v3_4/translate"
	ign34types "github.com/coreos/ignition/v2/config/v3_4/types"
	ign "github.com/coreos/ignition/v2/config/v3_5"
	ign35translate "github.com/coreos/ignition/v2/config/v3_5/translate"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	ignvalidate "github.com/coreos/ignition/v2/config/validate"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// Config is a MachineConfig whose Ignition config has been parsed and
// translated to one spec version (3.5), so that a version bump alone is no
// change.
type Config struct {
	// Name is the MachineConfig's name (or, without one, where it came from).
	Name     string
	Spec     mcfgv1.MachineConfigSpec
	Ignition igntypes.Config
	// Sources maps change ids to the source MachineConfig that gave them.
	Sources map[string]string
}

// machineConfig is the part of a MachineConfig document the planner reads.
// It is decoded leniently because rendered configs carry ndp's status.
type machineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              mcfgv1.MachineConfigSpec `json:"spec"`
}

// InputError is bad input: it names the object, the field and, where there
// is one, the line. Callers map it to "invalid input" (exit code 1).
type InputError struct {
	Object string // e.g. `old.yaml: MachineConfig "rendered-worker-1"`
	Field  string // e.g. "spec.config"
	Line   int    // 0 when unknown
	Err    error
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.Object)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *InputError) Unwrap() error { return e.Err }

// Parse decodes one MachineConfig document (YAML or JSON).
// origin names the document in errors (usually its file name).
func Parse(origin string, data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &InputError{Object: origin, Err: errors.New("empty document, expected a MachineConfig")}
	}
	var mc machineConfig
	if trimmed := bytes.TrimSpace(data); trimmed[0] == '{' {
		// JSON (what `oc get -o json` and the API server give) skips the
		// YAML-to-JSON conversion, a fifth of the cost of a plan.
		if err := json.Unmarshal(trimmed, &mc); err != nil {
			return nil, jsonError(origin, trimmed, err)
		}
	} else if err := yaml.Unmarshal(data, &mc); err != nil {
		return nil, yamlError(origin, err)
	}
	if mc.Kind != "" && mc.Kind != "MachineConfig" {
		return nil, &InputError{Object: origin, Field: "kind", Err: fmt.Errorf("is %q, expected MachineConfig", mc.Kind)}
	}
	if mc.APIVersion != "" && mc.APIVersion != mcfgv1.GroupVersion.String() {
		return nil, &InputError{Object: origin, Field: "apiVersion", Err: fmt.Errorf("is %q, expected %s", mc.APIVersion, mcfgv1.GroupVersion)}
	}
	name := mc.Name
	object := origin
	if name != "" {
		object = fmt.Sprintf("%s: MachineConfig %q", origin, name)
	} else {
		name = origin
	}
	cfg, err := New(name, mc.Spec)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Object = object
		}
		return nil, err
	}
	if raw := mc.Annotations[ndpmcv1.SourcesAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &cfg.Sources); err != nil {
			return nil, &InputError{Object: object, Field: "metadata.annotations[" + ndpmcv1.SourcesAnnotation + "]", Err: err}
		}
	}
	return cfg, nil
}

// New parses the Ignition config of a MachineConfig spec. Any
// supported 3.x spec version is accepted and translated to 3.5.
func New(name string, spec mcfgv1.MachineConfigSpec) (*Config, error) {
	cfg := &Config{Name: name, Spec: spec}
	raw := bytes.TrimSpace(spec.Config.Raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
		return cfg, nil
	}
	// A YAML-decoded spec.config arrives as JSON already (sigs.k8s.io/yaml
	// converts), so Ignition's JSON parser sees what the API server stores.
	if parsed, ok := parseIgnition(raw); ok {
		cfg.Ignition = parsed
		return cfg, nil
	}
	// Not accepted on the fast path: Ignition's own parser decides, and
	// gives its report (with the paths) when it rejects the config.
	parsed, rpt, err := ign.ParseCompatibleVersion(raw)
	if err != nil {
		ie := &InputError{Object: name, Field: "spec.config", Err: err}
		if errors.Is(err, ignerrors.ErrUnknownVersion) || errors.Is(err, ignerrors.ErrInvalidVersion) {
			var v struct {
				Ignition struct{ Version string } `json:"ignition"`
			}
			_ = json.Unmarshal(raw, &v)
			ie.Field = "spec.config.ignition.version"
			ie.Err = fmt.Errorf("%w %q: ndp reads Ignition 3.0.0 to %s", err, v.Ignition.Version, igntypes.MaxVersion)
		} else if msg := strings.TrimSpace(rpt.String()); msg != "" {
			// The report's line and column count in the JSON form of
			// spec.config, not in the user's YAML: keep only its path.
			ie.Err = fmt.Errorf("%w: %s", err, ignPosition.ReplaceAllString(msg, ""))
		}
		return nil, ie
	}
	cfg.Ignition = parsed
	return cfg, nil
}

// FromIgnition is New for a spec whose spec.config is the encoding of ign,
// an Ignition config of the newest version (a rendering ndp merged): it
// validates ign as New validates what it parses, but does not decode the
// JSON again. An invalid ign gets New's error, with Ignition's report.
// The result equals New's but for empty lists, which New's decoding would
// leave nil (TestFromIgnitionIsNew).
func FromIgnition(name string, spec mcfgv1.MachineConfigSpec, ign igntypes.Config) (*Config, error) {
	if ign.Ignition.Version != igntypes.MaxVersion.String() || !valid(&ign) {
		return New(name, spec)
	}
	return &Config{Name: name, Spec: spec, Ignition: ign}, nil
}

// parseIgnition is ign.ParseCompatibleVersion without the vcontext tree:
// the same steps (encoding/json into the spec version's types, Ignition's
// validation, translation to 3.5) minus the JSON position tree Ignition builds
// only to add line and column to its report and warn about unused keys —
// nearly all of its cost, and nothing ndp keeps (unknown keys are warnings,
// never fatal, in Ignition too). It answers ok only for a valid config of an
// exact 3.x.0 version; for anything else (bad JSON, another version string,
// a fatal report) the caller runs Ignition's parser, whose verdict and report
// stand, so the fast path never accepts what Ignition rejects.
func parseIgnition(raw []byte) (igntypes.Config, bool) {
	var cfg igntypes.Config
	if json.Unmarshal(raw, &cfg) != nil {
		return igntypes.Config{}, false
	}
	switch cfg.Ignition.Version {
	case "3.5.0":
		return cfg, valid(&cfg)
	case "3.4.0":
		c, ok := decodeValid[ign34types.Config](raw)
		return ign35translate.Translate(c), ok
	case "3.3.0":
		c, ok := decodeValid[ign33types.Config](raw)
		return ign35translate.Translate(ign34translate.Translate(c)), ok
	case "3.2.0":
		c, ok := decodeValid[ign32types.Config](raw)
		return ign35translate.Translate(ign34translate.Translate(ign33translate.Translate(c))), ok
	case "3.1.0":
		c, ok := decodeValid[ign31types.Config](raw)
		return ign35translate.Translate(ign34translate.Translate(ign33translate.Translate(ign32translate.Translate(c)))), ok
	case "3.0.0":
		c, ok := decodeValid[ign30types.Config](raw)
		return ign35translate.Translate(ign34translate.Translate(ign33translate.Translate(ign32translate.Translate(ign31translate.Translate(c))))), ok
	}
	return igntypes.Config{}, false
}

// decodeValid decodes raw into an older spec version's types and validates it.
func decodeValid[T any](raw []byte) (T, bool) {
	var c T
	if json.Unmarshal(raw, &c) != nil {
		return c, false
	}
	return c, valid(&c)
}

// valid runs the checks of Ignition's Parse (field validation and
// duplicates) on a pointer to a config, without the position tree: given no
// raw config, ValidateWithContext skips it. fastValid walks faster; where it
// cannot be sure, Ignition's walk decides.
func valid(cfg any) bool {
	if v, ok := fastValid(cfg); ok {
		return v
	}
	return !ignvalidate.ValidateWithContext(reflect.ValueOf(cfg).Elem().Interface(), nil).IsFatal()
}

// jsonError names the line of a JSON syntax or type error.
func jsonError(origin string, data []byte, err error) error {
	var offset int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	ie := &InputError{Object: origin, Err: fmt.Errorf("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))}
	if offset >= 0 {
		ie.Line = bytes.Count(data[:min(int(offset), len(data))], []byte("\n")) + 1
	}
	return ie
}

var ignPosition = regexp.MustCompile(`, line \d+ col \d+`)

// yamlError turns sigs.k8s.io/yaml's message ("error converting YAML to
// JSON: yaml: line 3: ...") into an InputError carrying the line.
func yamlError(origin string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		if i := strings.Index(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
	}
	return &InputError{Object: origin, Line: line, Err: fmt.Errorf("malformed YAML: %s", msg)}
}
