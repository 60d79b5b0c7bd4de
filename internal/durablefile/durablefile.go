// Package durablefile writes files that must survive a power cut or a
// reboot right after the write: the daemon's records of what it asked the
// host to do, and the OS stand-ins' state that a reboot finalizes.
package durablefile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Write writes data to path (opened with flag, created if missing) and
// syncs it before closing.
func Write(path string, flag int, data []byte) error {
	f, err := os.OpenFile(path, flag|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// AppendJSONLine appends v as one line of JSON to path, creating the file
// and its directory if missing.
func AppendJSONLine(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return Write(path, os.O_APPEND, append(b, '\n'))
}
