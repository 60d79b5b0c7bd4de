package render

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"

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

// RegistriesConfig is the Ignition config of every pool's
// 99-<pool>-generated-registries MachineConfig in executor mode (the same
// for every pool): registries.conf, base with the cluster's image-mirror
// objects rendered in as the MCO renders them (registries.Render), in the
// MCO's Ignition form (nodeconfig.Ignition), and the number of
// image-mirror entries. Unlike the MCO's, the file is written
// even without objects (ndp has no template that holds the base). The
// registries controller writes it; the image-mirror preview renders it
// with a candidate object in place. Invalid objects give a
// *registries.InvalidError naming each object and field; a rendering
// CRI-O would not load (over a base of a test's) is an error too.
func RegistriesConfig(base string, idms []configv1.ImageDigestMirrorSet, itms []configv1.ImageTagMirrorSet, icsp []operatorv1alpha1.ImageContentSourcePolicy) (ignition []byte, entries int, err error) {
	in := registries.Inputs{IDMS: idms, ITMS: itms, ICSP: icsp}
	data, err := registries.Render([]byte(base), in)
	if err != nil {
		return nil, 0, err
	}
	if _, err := registries.Parse(data); err != nil {
		return nil, 0, fmt.Errorf("registries.conf rendered over the base: %w", err)
	}
	ign, err := nodeconfig.Ignition([]nodeconfig.File{{Path: registries.ConfPath, Data: data}})
	return ign, registries.MirrorEntries(in), err
}
