package nodeconfig

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	storageconfig "go.podman.io/storage/pkg/config"
)

// Paths of the files a ContainerRuntimeConfig renders to (the MCO's
// container-runtime-config helpers.go): one CRI-O drop-in per field, so a
// field not set keeps CRI-O's own default.
const (
	StorageConfPath              = "/etc/containers/storage.conf"
	CRIODropInLogLevelPath       = "/etc/crio/crio.conf.d/01-ctrcfg-logLevel"
	CRIODropInPidsLimitPath      = "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"
	CRIODropInLogSizeMaxPath     = "/etc/crio/crio.conf.d/01-ctrcfg-logSizeMax"
	CRIODropInDefaultRuntimePath = "/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime"
)

// The MCO's limits (minPidsLimit, minLogSize).
const (
	minPidsLimit = 20
	minLogSize   = 8192
)

// The MCO's TOML tables, one per drop-in: the encoder writes every field
// of a struct, so each drop-in has a struct of its own.
type (
	crioLogLevel struct {
		Crio struct {
			Runtime struct {
				LogLevel string `toml:"log_level,omitempty"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	crioPidsLimit struct {
		Crio struct {
			Runtime struct {
				PidsLimit int64 `toml:"pids_limit,omitempty"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	crioLogSizeMax struct {
		Crio struct {
			Runtime struct {
				LogSizeMax int64 `toml:"log_size_max,omitempty"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	crioDefaultRuntime struct {
		Crio struct {
			Runtime struct {
				DefaultRuntime string `toml:"default_runtime,omitempty"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	storageTOML struct {
		Storage struct {
			Driver    string                                `toml:"driver"`
			RunRoot   string                                `toml:"runroot"`
			GraphRoot string                                `toml:"graphroot"`
			Options   struct{ storageconfig.OptionsConfig } `toml:"options"`
		} `toml:"storage"`
	}
)

func crioObject(c *mcfgv1.ContainerRuntimeConfig) string {
	return fmt.Sprintf("ContainerRuntimeConfig %q", c.Name)
}

// ValidateContainerRuntimeConfig is the MCO's
// validateUserContainerRuntimeConfig: pidsLimit 0 or at least 20;
// logSizeMax above 8 KiB (or not positive); overlaySize not negative;
// logLevel one of CRI-O's; defaultRuntime runc or crun. The error is an
// *InvalidError naming the field.
func ValidateContainerRuntimeConfig(c *mcfgv1.ContainerRuntimeConfig) error {
	cfg := c.Spec.ContainerRuntimeConfig
	if cfg == nil {
		return nil
	}
	obj := crioObject(c)
	if cfg.PidsLimit != nil && *cfg.PidsLimit != 0 && *cfg.PidsLimit < minPidsLimit {
		return &InvalidError{Object: obj, Field: "spec.containerRuntimeConfig.pidsLimit", Msg: fmt.Sprintf("%d is below the minimum of %d", *cfg.PidsLimit, minPidsLimit)}
	}
	if cfg.LogSizeMax != nil && cfg.LogSizeMax.Value() > 0 && cfg.LogSizeMax.Value() <= minLogSize {
		return &InvalidError{Object: obj, Field: "spec.containerRuntimeConfig.logSizeMax", Msg: fmt.Sprintf("%s must be more than 8k", cfg.LogSizeMax)}
	}
	if cfg.OverlaySize != nil && cfg.OverlaySize.Value() < 0 {
		return &InvalidError{Object: obj, Field: "spec.containerRuntimeConfig.overlaySize", Msg: fmt.Sprintf("%s must not be negative", cfg.OverlaySize)}
	}
	switch cfg.LogLevel {
	case "", "error", "fatal", "panic", "warn", "info", "debug", "trace":
	default:
		return &InvalidError{Object: obj, Field: "spec.containerRuntimeConfig.logLevel", Msg: fmt.Sprintf("%q is not one of error, fatal, panic, warn, info, debug, trace", cfg.LogLevel)}
	}
	switch cfg.DefaultRuntime {
	case mcfgv1.ContainerRuntimeDefaultRuntimeEmpty, mcfgv1.ContainerRuntimeDefaultRuntimeRunc, mcfgv1.ContainerRuntimeDefaultRuntimeCrun:
	default:
		return &InvalidError{Object: obj, Field: "spec.containerRuntimeConfig.defaultRuntime", Msg: fmt.Sprintf("%q is not one of crun, runc", cfg.DefaultRuntime)}
	}
	return nil
}

// ContainerRuntimeFiles renders a ContainerRuntimeConfig as the MCO's
// syncContainerRuntimeConfig does: storage.conf (the pool's, from source,
// with options.size set) when overlaySize is set, then a CRI-O drop-in for
// each of logLevel, pidsLimit, logSizeMax and defaultRuntime that is set,
// TOML-encoded with BurntSushi/toml as the MCO encodes them. base is the
// pool's storage.conf without any ContainerRuntimeConfig; it is needed only
// with overlaySize. Validate first: ContainerRuntimeFiles assumes a valid
// config.
func ContainerRuntimeFiles(c *mcfgv1.ContainerRuntimeConfig, base []byte, source string) ([]File, error) {
	cfg := c.Spec.ContainerRuntimeConfig
	if cfg == nil {
		return nil, nil
	}
	var files []File
	if cfg.OverlaySize != nil && !cfg.OverlaySize.IsZero() {
		if base == nil {
			return nil, &InvalidError{Object: crioObject(c), Field: "spec.containerRuntimeConfig.overlaySize",
				Msg: fmt.Sprintf("the pool's MachineConfigs have no %s to set the size in", StorageConfPath)}
		}
		var st storageTOML
		if _, err := toml.NewDecoder(bytes.NewReader(base)).Decode(&st); err != nil {
			return nil, fmt.Errorf("%s in %s: %w", StorageConfPath, source, err)
		}
		st.Storage.Options.Size = cfg.OverlaySize.String()
		data, err := encodeTOML(st)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: StorageConfPath, Data: data})
	}
	add := func(path string, v any) error {
		data, err := encodeTOML(v)
		if err == nil {
			files = append(files, File{Path: path, Data: data})
		}
		return err
	}
	if cfg.LogLevel != "" {
		var t crioLogLevel
		t.Crio.Runtime.LogLevel = cfg.LogLevel
		if err := add(CRIODropInLogLevelPath, t); err != nil {
			return nil, err
		}
	}
	if cfg.PidsLimit != nil {
		var t crioPidsLimit
		t.Crio.Runtime.PidsLimit = *cfg.PidsLimit
		if err := add(CRIODropInPidsLimitPath, t); err != nil {
			return nil, err
		}
	}
	if cfg.LogSizeMax != nil && !cfg.LogSizeMax.IsZero() {
		var t crioLogSizeMax
		t.Crio.Runtime.LogSizeMax = cfg.LogSizeMax.Value()
		if err := add(CRIODropInLogSizeMaxPath, t); err != nil {
			return nil, err
		}
	}
	if cfg.DefaultRuntime != mcfgv1.ContainerRuntimeDefaultRuntimeEmpty {
		var t crioDefaultRuntime
		t.Crio.Runtime.DefaultRuntime = string(cfg.DefaultRuntime)
		if err := add(CRIODropInDefaultRuntimePath, t); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func encodeTOML(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("encoding TOML: %w", err)
	}
	return b.Bytes(), nil
}
