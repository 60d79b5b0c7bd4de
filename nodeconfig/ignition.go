package nodeconfig

import (
	"encoding/json"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// File is one file of a generated MachineConfig.
type File struct {
	Path string
	Data []byte
}

// ignitionFile is the MCO's ctrlcommon.NewIgnFileBytesOverwriting: mode
// 0644, overwrite, the contents as a data URL (dataurl.EncodeBytes), no
// compression.
func ignitionFile(f File) igntypes.File {
	mode, overwrite, source, compression := 0o644, true, dataurl.EncodeBytes(f.Data), ""
	return igntypes.File{
		Node: igntypes.Node{Path: f.Path, Overwrite: &overwrite},
		FileEmbedded1: igntypes.FileEmbedded1{
			Mode:     &mode,
			Contents: igntypes.Resource{Source: &source, Compression: &compression},
		},
	}
}

// Ignition is the Ignition config (spec 3.5.0, the MCO's
// ctrlcommon.NewIgnConfig) holding files, in order, as the MCO writes a
// generated MachineConfig's spec.config. Only the fields set are encoded.
func Ignition(files []File) ([]byte, error) {
	out := make([]map[string]any, 0, len(files))
	for _, f := range files {
		ign := ignitionFile(f)
		out = append(out, map[string]any{
			"path": ign.Path, "overwrite": *ign.Overwrite, "mode": *ign.Mode,
			"contents": map[string]any{"source": *ign.Contents.Source, "compression": *ign.Contents.Compression},
		})
	}
	cfg := map[string]any{"ignition": map[string]any{"version": igntypes.MaxVersion.String()}}
	if len(out) > 0 {
		cfg["storage"] = map[string]any{"files": out}
	}
	return json.Marshal(cfg)
}
