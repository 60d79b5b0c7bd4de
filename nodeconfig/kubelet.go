package nodeconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/imdario/mergo"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Paths of the files a KubeletConfig renders to (the MCO's helpers.go).
const (
	KubeletConfPath     = "/etc/kubernetes/kubelet.conf"
	KubeletLogLevelPath = "/etc/systemd/system/kubelet.service.d/20-logging.conf"
	NodeSizingEnvPath   = "/etc/node-sizing-enabled.env"
)

// InvalidError is a KubeletConfig or ContainerRuntimeConfig that cannot be
// rendered, naming the field at fault: the controllers report it in a
// Failure condition and write nothing; the webhook denies it.
type InvalidError struct {
	Object string // `KubeletConfig "name"`
	Field  string // spec.kubeletConfig.cpuManagerPolicy
	Msg    string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Object, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Object, e.Field, e.Msg)
}

// IsInvalid tells whether err is (or wraps) an *InvalidError.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

func kubeletObject(kc *mcfgv1.KubeletConfig) string { return fmt.Sprintf("KubeletConfig %q", kc.Name) }

// DecodeUserKubeletConfig reads spec.kubeletConfig strictly: an unknown or
// duplicate field is an *InvalidError naming it (the MCO ignores unknown
// fields, so a misspelt one is silently lost).
func DecodeUserKubeletConfig(kc *mcfgv1.KubeletConfig) (*kubeletv1beta1.KubeletConfiguration, error) {
	if kc.Spec.KubeletConfig == nil || len(kc.Spec.KubeletConfig.Raw) == 0 {
		return nil, nil
	}
	raw, err := yaml.YAMLToJSON(kc.Spec.KubeletConfig.Raw) // JSON from the API server; YAML in tests
	if err != nil {
		return nil, &InvalidError{Object: kubeletObject(kc), Field: "spec.kubeletConfig", Msg: err.Error()}
	}
	out := &kubeletv1beta1.KubeletConfiguration{}
	strict, err := sigsjson.UnmarshalStrict(raw, out)
	if err != nil {
		return nil, &InvalidError{Object: kubeletObject(kc), Field: "spec.kubeletConfig", Msg: err.Error()}
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, &InvalidError{Object: kubeletObject(kc), Field: "spec.kubeletConfig",
			Msg: strings.Join(msgs, "; ") + " (not a field of KubeletConfiguration kubelet.config.k8s.io/v1beta1)"}
	}
	return out, nil
}

// DecodeBaseKubeletConfig reads the pool's kubelet.conf (YAML or JSON), as
// the MCO's DecodeKubeletConfig does, but strictly: a field the
// KubeletConfiguration types do not know would be dropped when the merged
// file is encoded again, so it is an error instead.
func DecodeBaseKubeletConfig(data []byte, source string) (*kubeletv1beta1.KubeletConfiguration, error) {
	raw, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", KubeletConfPath, source, err)
	}
	out := &kubeletv1beta1.KubeletConfiguration{}
	strict, err := sigsjson.UnmarshalStrict(raw, out)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", KubeletConfPath, source, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s in %s: %v: ndp's KubeletConfiguration (k8s.io/kubelet v1beta1) does not know it, and would drop it", KubeletConfPath, source, errors.Join(strict...))
	}
	return out, nil
}

// EncodeKubeletConfig encodes cfg as the MCO's EncodeKubeletConfig does
// with runtime.ContentTypeYAML: kubelet.config.k8s.io/v1beta1, with
// apiVersion and kind, through apimachinery's YAML serializer.
func EncodeKubeletConfig(cfg *kubeletv1beta1.KubeletConfiguration) ([]byte, error) {
	scheme := runtime.NewScheme()
	if err := kubeletv1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		return nil, fmt.Errorf("unsupported media type %q", runtime.ContentTypeYAML)
	}
	return runtime.Encode(codecs.EncoderForVersion(info.Serializer, kubeletv1beta1.SchemeGroupVersion), cfg)
}

// KubeletFiles renders a KubeletConfig over base, the pool's kubelet.conf
// without any KubeletConfig (from source, for messages), as the MCO's
// syncKubeletConfig and generateKubeletIgnFiles do:
//
//   - spec.tlsSecurityProfile sets tlsMinVersion and tlsCipherSuites (the
//     profile's OpenSSL cipher names as IANA names);
//   - spec.kubeletConfig is merged over the base with mergo's
//     WithOverride: every field it sets replaces the base's, maps are
//     merged key by key, lists replaced; featureGates are ignored (they
//     come from the cluster's FeatureGate); protectKernelDefaults: false is
//     honoured although false is the zero value; an unset
//     systemReservedCgroup clears the base's only when the user's
//     enforceNodeAllocatable enforces neither system-reserved nor
//     system-reserved-compressible;
//   - systemReserved memory, cpu and ephemeral-storage go to
//     /etc/node-sizing-enabled.env, not to kubelet.conf (as does
//     spec.autoSizingReserved);
//   - reservedSystemCPUs clears systemReservedCgroup and drops the
//     system-reserved enforcements, keeping pods (added first if missing);
//   - spec.logLevel is the kubelet.service drop-in 20-logging.conf
//     (KUBELET_LOG_LEVEL).
//
// The files come in the MCO's order: node sizing, log level, kubelet.conf.
// Validate(kc) first: KubeletFiles assumes a valid config.
func KubeletFiles(kc *mcfgv1.KubeletConfig, base []byte, source string) ([]File, error) {
	original, err := DecodeBaseKubeletConfig(base, source)
	if err != nil {
		return nil, err
	}
	if kc.Spec.TLSSecurityProfile != nil {
		original.TLSMinVersion, original.TLSCipherSuites = securityProfileCiphers(kc.Spec.TLSSecurityProfile)
	}
	userReserved := map[string]string{}
	user, err := DecodeUserKubeletConfig(kc)
	if err != nil {
		return nil, err
	}
	if user != nil {
		for _, k := range []string{"memory", "cpu", "ephemeral-storage"} {
			if v, ok := user.SystemReserved[k]; ok {
				userReserved[k] = v
				delete(user.SystemReserved, k)
			}
		}
		user.FeatureGates = nil
		// protectKernelDefaults is a plain bool with omitempty: false is
		// the zero value, which mergo never copies (the MCO's workaround).
		var probe struct {
			ProtectKernelDefaults *bool `json:"protectKernelDefaults"`
		}
		if raw, err := yaml.YAMLToJSON(kc.Spec.KubeletConfig.Raw); err == nil && json.Unmarshal(raw, &probe) == nil &&
			probe.ProtectKernelDefaults != nil && !*probe.ProtectKernelDefaults {
			original.ProtectKernelDefaults = false
		}
		if err := mergo.Merge(original, user, mergo.WithOverride); err != nil {
			return nil, fmt.Errorf("%s: merging spec.kubeletConfig into %s: %w", kubeletObject(kc), KubeletConfPath, err)
		}
		// mergo keeps the base's value for an unset string: the base's
		// systemReservedCgroup is cleared only when the user's
		// enforceNodeAllocatable enforces no system reservation.
		if user.SystemReservedCgroup == "" && len(user.EnforceNodeAllocatable) > 0 && !enforcesSystemReserved(user.EnforceNodeAllocatable) {
			original.SystemReservedCgroup = ""
		}
	}
	if original.ReservedSystemCPUs != "" {
		// Reserved CPUs replace the system reservation's cgroup: its
		// enforcement goes, pods' stays (first, if it was not there).
		original.SystemReservedCgroup = ""
		var kept []string
		hasPods := false
		for _, v := range original.EnforceNodeAllocatable {
			if enforcesSystemReserved([]string{v}) {
				continue
			}
			hasPods = hasPods || v == "pods"
			kept = append(kept, v)
		}
		if !hasPods {
			kept = append([]string{"pods"}, kept...)
		}
		original.EnforceNodeAllocatable = kept
	}
	// The kubelet reads the merged file: what it would refuse there (a
	// soft threshold whose grace period is in the base, reservedSystemCPUs
	// with the base's kubeReservedCgroup...) is refused here.
	if field, msg := CheckKubelet(original); field != "" {
		return nil, &InvalidError{Object: kubeletObject(kc), Field: field + " of " + KubeletConfPath + " merged with the " + source, Msg: msg}
	}
	conf, err := EncodeKubeletConfig(original)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding %s: %w", kubeletObject(kc), KubeletConfPath, err)
	}
	var files []File
	switch {
	case len(userReserved) > 0:
		files = append(files, nodeSizingFile(nil, userReserved))
	case kc.Spec.AutoSizingReserved != nil:
		files = append(files, nodeSizingFile(kc.Spec.AutoSizingReserved, userReserved))
	}
	if kc.Spec.LogLevel != nil {
		files = append(files, File{Path: KubeletLogLevelPath, Data: fmt.Appendf(nil, "[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=%d\"\n", *kc.Spec.LogLevel)})
	}
	return append(files, File{Path: KubeletConfPath, Data: conf}), nil
}

// nodeSizingFile is the MCO's createNewKubeletDynamicSystemReservedIgnition.
func nodeSizingFile(auto *bool, reserved map[string]string) File {
	enabled := "false"
	if auto != nil {
		enabled = strconv.FormatBool(*auto)
	}
	get := func(k, def string) string {
		if v := reserved[k]; v != "" {
			return v
		}
		return def
	}
	return File{Path: NodeSizingEnvPath, Data: fmt.Appendf(nil, "NODE_SIZING_ENABLED=%s\nSYSTEM_RESERVED_MEMORY=%s\nSYSTEM_RESERVED_CPU=%s\nSYSTEM_RESERVED_ES=%s\n",
		enabled, get("memory", "1Gi"), get("cpu", "500m"), get("ephemeral-storage", "1Gi"))}
}

// securityProfileCiphers is the MCO's ctrlcommon.GetSecurityProfileCiphers:
// the profile's minimum TLS version and its ciphers as IANA names (those
// without one dropped); a custom profile without a spec is Intermediate.
func securityProfileCiphers(profile *configv1.TLSSecurityProfile) (string, []string) {
	var spec *configv1.TLSProfileSpec
	if profile.Type == configv1.TLSProfileCustomType {
		if profile.Custom != nil {
			spec = &profile.Custom.TLSProfileSpec
		}
	} else {
		spec = configv1.TLSProfiles[profile.Type]
	}
	if spec == nil {
		spec = configv1.TLSProfiles[configv1.TLSProfileIntermediateType]
	}
	ciphers := make([]string, 0, len(spec.Ciphers))
	for _, c := range spec.Ciphers {
		if iana, ok := openSSLToIANA[c]; ok {
			ciphers = append(ciphers, iana)
		}
	}
	return string(spec.MinTLSVersion), ciphers
}

// openSSLToIANA maps OpenSSL cipher suite names to their IANA names (the
// TLS parameters registry), for the suites OpenShift's TLS profiles name,
// as library-go's crypto.OpenSSLToIANACipherSuites does.
var openSSLToIANA = map[string]string{
	"TLS_AES_128_GCM_SHA256":        "TLS_AES_128_GCM_SHA256",
	"TLS_AES_256_GCM_SHA384":        "TLS_AES_256_GCM_SHA384",
	"TLS_CHACHA20_POLY1305_SHA256":  "TLS_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// enforcesSystemReserved: one of the enforceNodeAllocatable values
// enforces the system reservation (system-reserved or
// system-reserved-compressible).
func enforcesSystemReserved(vals []string) bool {
	for _, v := range vals {
		if v == "system-reserved" || v == "system-reserved-compressible" {
			return true
		}
	}
	return false
}
