package machineconfig

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
)

// MaxDecodedFile bounds a decompressed file, so that a gzip bomb in a
// MachineConfig cannot exhaust the planner's (or a node's) memory.
const MaxDecodedFile = 64 << 20

// FileContents decodes a file's inline contents (data URL, plain or
// base64, optionally gzip-compressed). A remote source, or none, yields nil.
func FileContents(cfg *Config, f *igntypes.File) ([]byte, error) {
	src := deref(f.Contents.Source)
	if src == "" || !strings.HasPrefix(src, "data:") {
		return nil, nil
	}
	fail := func(err error) error {
		return &InputError{Object: cfg.Name, Field: fmt.Sprintf("spec.config.storage.files[path=%s].contents", f.Path), Err: err}
	}
	data, err := decodeDataURL(src)
	if err != nil {
		return nil, fail(fmt.Errorf("invalid data URL: %w", err))
	}
	switch comp := deref(f.Contents.Compression); comp {
	case "":
		return data, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fail(fmt.Errorf("invalid gzip data: %w", err))
		}
		data, err := io.ReadAll(io.LimitReader(zr, MaxDecodedFile+1))
		if err != nil {
			return nil, fail(fmt.Errorf("invalid gzip data: %w", err))
		}
		if len(data) > MaxDecodedFile {
			return nil, fail(fmt.Errorf("decompressed contents exceed %d bytes", MaxDecodedFile))
		}
		return data, nil
	default:
		return nil, fail(fmt.Errorf("unsupported compression %q", comp))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
