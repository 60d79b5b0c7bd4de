package mcorender

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
)

// The files the MCO's container-runtime-config controller writes into a
// pool's 99-<pool>-generated-registries MachineConfig beside
// registries.conf (pkg/controller/container-runtime-config/helpers.go).
const (
	PolicyPath           = "/etc/containers/policy.json"
	SearchRegistriesPath = "/etc/containers/registries.conf.d/01-image-searchRegistries.conf"
)

// registriesKind names the generated registries MachineConfig,
// 99-<pool>-generated-registries, for render.GeneratedBaseFiles.
const registriesKind nodeconfig.Kind = "registries"

// InvalidRegistriesError is image-mirror objects or an image config that
// the MCO's container-runtime-config controller refuses: nothing is
// rendered.
type InvalidRegistriesError struct{ Err error }

func (e *InvalidRegistriesError) Error() string {
	return "the MCO's container-runtime-config controller refuses it, nothing is rendered: " + e.Err.Error()
}

func (e *InvalidRegistriesError) Unwrap() error { return e.Err }

// RegistriesIgnition is the Ignition config of the generated registries
// MachineConfig the MCO's container-runtime-config controller writes for
// pool from in, over the pool's template registries.conf and policy.json:
// what its MachineConfigs (mcs, as PoolView.Sources lists them) render to
// without it. A refusal is an *InvalidRegistriesError.
func RegistriesIgnition(pool string, mcs []*ndpmcv1.MachineConfig, in registries.Inputs) ([]byte, error) {
	base, err := render.GeneratedBaseFiles(pool, mcs, registriesKind, registries.ConfPath, PolicyPath)
	if err != nil {
		return nil, err
	}
	files, err := registriesFiles(base[registries.ConfPath].Data, base[PolicyPath].Data, in)
	if err != nil {
		return nil, &InvalidRegistriesError{err}
	}
	return nodeconfig.Ignition(files)
}

// registriesFiles are the files of the generated registries MachineConfig,
// from the pool's template registries.conf and policy.json (baseConf,
// basePolicy), once registries.Validate accepts in:
//
//   - registries.conf (registries.Render), when any mirror, insecure or
//     blocked registry is set;
//   - policy.json, when blocked or allowed registries are set: rejected
//     by default and accepted for the allowed ones, or accepted by default
//     and rejected for the blocked ones, for the docker and atomic
//     transports (atomic without scopes of three or more segments);
//   - the search registries drop-in, when the search list is set.
//
// Not modelled: ClusterImagePolicies / ImagePolicies (signature
// requirements, registries.d, /etc/crio/policies).
func registriesFiles(baseConf, basePolicy []byte, in registries.Inputs) ([]nodeconfig.File, error) {
	if err := registries.Validate(in); err != nil {
		return nil, err
	}
	var out []nodeconfig.File
	if in.Insecure != nil || in.Blocked != nil || len(in.IDMS)+len(in.ITMS)+len(in.ICSP) > 0 {
		if len(baseConf) == 0 {
			return nil, fmt.Errorf("the pool's template has no %s to add the mirrors to", registries.ConfPath)
		}
		data, err := registries.Render(baseConf, in)
		if err != nil {
			return nil, err
		}
		out = append(out, nodeconfig.File{Path: registries.ConfPath, Data: data})
	}
	if in.Blocked != nil || in.Allowed != nil {
		if len(basePolicy) == 0 {
			return nil, fmt.Errorf("the pool's template has no %s", PolicyPath)
		}
		data, err := policyJSON(basePolicy, in.Blocked, in.Allowed)
		if err != nil {
			return nil, err
		}
		out = append(out, nodeconfig.File{Path: PolicyPath, Data: data})
	}
	if in.Search != nil {
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(sysregistriesv2.V2RegistriesConf{UnqualifiedSearchRegistries: in.Search}); err != nil {
			return nil, err
		}
		out = append(out, nodeconfig.File{Path: SearchRegistriesPath, Data: b.Bytes()})
	}
	return out, nil
}

// policyJSON edits the template's policy.json for the blocked and allowed
// registries (registries.Validate refuses both set). The MCO encodes
// containers/image's signature.Policy; this keeps the document's own keys
// (the content is what the MCO writes; the key order may differ).
func policyJSON(base []byte, blocked, allowed []string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("the pool's template %s: %w", PolicyPath, err)
	}
	scopes := map[string]any{}
	reject := []any{map[string]any{"type": "reject"}}
	accept := []any{map[string]any{"type": "insecureAcceptAnything"}}
	if len(allowed) > 0 {
		doc["default"] = reject
		for _, r := range allowed {
			scopes[r] = accept
		}
	}
	if len(blocked) > 0 {
		doc["default"] = accept
		for _, r := range blocked {
			scopes[r] = reject
		}
	}
	if len(scopes) > 0 {
		transports, _ := doc["transports"].(map[string]any)
		if transports == nil {
			transports = map[string]any{}
		}
		transports["docker"] = scopes
		atomic := map[string]any{}
		for r, v := range scopes {
			if strings.Count(r, "/") < 3 {
				atomic[r] = v
			}
		}
		transports["atomic"] = atomic
		doc["transports"] = transports
	}
	return json.MarshalIndent(doc, "", "  ")
}

// RegistriesInputs reads what the MCO's container-runtime-config
// controller renders from: the image-mirror objects and image.config
// cluster's registry sources (none when it does not exist).
func RegistriesInputs(ctx context.Context, r client.Reader) (registries.Inputs, error) {
	var in registries.Inputs
	var idms configv1.ImageDigestMirrorSetList
	var itms configv1.ImageTagMirrorSetList
	var icsp operatorv1alpha1.ImageContentSourcePolicyList
	for _, l := range []client.ObjectList{&idms, &itms, &icsp} {
		if err := r.List(ctx, l); err != nil {
			return in, fmt.Errorf("listing image-mirror objects: %w", err)
		}
	}
	in.IDMS, in.ITMS, in.ICSP = idms.Items, itms.Items, icsp.Items
	var img configv1.Image
	switch err := r.Get(ctx, client.ObjectKey{Name: "cluster"}, &img); {
	case err == nil:
		in.SetSources(&img.Spec)
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("reading image.config.openshift.io cluster: %w", err)
	}
	return in, nil
}
