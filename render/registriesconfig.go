package render

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/registries"
)

// DefaultRegistriesBase is the registries.conf the mirror rules are added
// to (by the registries controller and the image-mirror preview, unless a
// test gives another): OpenShift's default search list, the one of the
// MCO's template registries.conf (01-<pool>-container-runtime).
const DefaultRegistriesBase = `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""
`

// GeneratedRegistriesName is the MachineConfig holding a pool's rendered
// registries.conf, the name the MCO gives its own: 99-<pool>-generated-registries.
func GeneratedRegistriesName(pool string) string {
	return "99-" + pool + "-generated-registries"
}

// InvalidMirrorsError lists the image-mirror objects that cannot be
// rendered, each named.
type InvalidMirrorsError struct{ Errs []error }

func (e *InvalidMirrorsError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// RegistriesConfig is the Ignition config of every pool's
// 99-<pool>-generated-registries MachineConfig (the same for every pool):
// registries.conf, base with the mirror rules of the cluster's image-mirror
// objects added (registries.MirrorRules, registries.Render), and the number
// of rules. The registries controller writes it; the image-mirror preview
// renders it with a candidate object in place (in advisor mode it renders
// the MCO's files instead, registries.RenderMCO). Invalid objects give an
// *InvalidMirrorsError naming each.
func RegistriesConfig(base string, idms []configv1.ImageDigestMirrorSet, itms []configv1.ImageTagMirrorSet, icsp []operatorv1alpha1.ImageContentSourcePolicy) (ignition []byte, rules int, err error) {
	mirrorRules, errs := registries.MirrorRules(idms, itms, icsp)
	if len(errs) > 0 {
		return nil, 0, &InvalidMirrorsError{Errs: errs}
	}
	baseConf, err := registries.Parse([]byte(base))
	if err != nil {
		return nil, 0, fmt.Errorf("base registries.conf: %w", err)
	}
	data := registries.Marshal(registries.Render(baseConf, mirrorRules))
	ign, err := json.Marshal(map[string]any{
		"ignition": map[string]any{"version": "3.5.0"},
		"storage": map[string]any{"files": []any{map[string]any{
			"path": registries.ConfPath, "mode": 0o644, "overwrite": true,
			"contents": map[string]any{"source": "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(data)},
		}}},
	})
	return ign, len(mirrorRules), err
}

// registriesKind names the MCO's generated registries MachineConfig,
// 99-<pool>-generated-registries, for GeneratedBaseFiles.
const registriesKind nodeconfig.Kind = "registries"

// InvalidMCORegistriesError is image-mirror objects or an image config
// that the MCO's container-runtime-config controller refuses: nothing is
// rendered.
type InvalidMCORegistriesError struct{ Err error }

func (e *InvalidMCORegistriesError) Error() string {
	return "the MCO's container-runtime-config controller refuses it, nothing is rendered: " + e.Err.Error()
}

func (e *InvalidMCORegistriesError) Unwrap() error { return e.Err }

// MCORegistriesIgnition is the Ignition config of the generated registries
// MachineConfig the MCO's container-runtime-config controller writes for
// pool from in (registries.RenderMCO), over the pool's template
// registries.conf and policy.json: what its MachineConfigs (mcs, as
// PoolView.Sources lists them) render to without it. A refusal is an
// *InvalidMCORegistriesError.
func MCORegistriesIgnition(pool string, mcs []*ndpmcv1.MachineConfig, in registries.MCOInputs) ([]byte, error) {
	base, err := GeneratedBaseFiles(pool, mcs, registriesKind, registries.ConfPath, registries.PolicyPath)
	if err != nil {
		return nil, err
	}
	files, err := registries.RenderMCO(base[registries.ConfPath].Data, base[registries.PolicyPath].Data, in)
	if err != nil {
		return nil, &InvalidMCORegistriesError{err}
	}
	gf := make([]nodeconfig.File, len(files))
	for i, f := range files {
		gf[i] = nodeconfig.File{Path: f.Path, Data: f.Data}
	}
	return nodeconfig.Ignition(gf)
}
