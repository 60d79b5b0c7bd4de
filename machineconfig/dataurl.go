package machineconfig

import (
	"encoding/base64"
	"strings"

	"github.com/vincent-petithory/dataurl"
)

// The two data URL forms MachineConfigs use: percent-encoded text (the MCO's
// templates, most tools) and base64 (large or binary files).
const (
	plainDataPrefix  = "data:,"
	base64DataPrefix = "data:;base64,"
)

// decodeDataURL decodes a data URL's data exactly as dataurl.DecodeString
// does (which Ignition uses). The two common forms are decoded here in one
// pass: dataurl's lexer sends every character through a channel to a
// goroutine, which made decoding a real rendered config's files most of a
// preview's time. Anything else, and any input the fast path does not
// accept, goes to dataurl, which gives its error.
func decodeDataURL(src string) ([]byte, error) {
	if data, ok := fastDataURL(src); ok {
		return data, nil
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, err
	}
	return du.Data, nil
}

// fastDataURL decodes the plain and base64 forms, accepting exactly what
// dataurl accepts for them (FuzzDataURL checks both ways); ok is false for
// other forms and for input dataurl refuses.
func fastDataURL(src string) ([]byte, bool) {
	switch {
	case strings.HasPrefix(src, plainDataPrefix):
		body := src[len(plainDataPrefix):]
		out := make([]byte, 0, len(body))
		for i := 0; i < len(body); i++ {
			c := body[i]
			if !urlChar(c) {
				return nil, false
			}
			if c != '%' {
				out = append(out, c)
				continue
			}
			if i+2 >= len(body) || !isHex(body[i+1]) || !isHex(body[i+2]) {
				return nil, false
			}
			out = append(out, unhex(body[i+1])<<4|unhex(body[i+2]))
			i += 2
		}
		return out, true
	case strings.HasPrefix(src, base64DataPrefix):
		// dataurl allows the base64 alphabet, '=' and '\n', then decodes
		// with encoding/base64, which refuses anything else but skips
		// '\r' too: refusing '\r' here is the same set.
		body := src[len(base64DataPrefix):]
		if strings.IndexByte(body, '\r') >= 0 {
			return nil, false
		}
		data, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, false
		}
		return data, true
	}
	return nil, false
}

// urlChar is dataurl's set of characters allowed in plain data: ASCII
// without controls and RFC 2396's delimiters and unwise characters ('%'
// is allowed, and must start an escape).
func urlChar(c byte) bool {
	if c < 0x20 || c >= 0x7f {
		return false
	}
	switch c {
	case ' ', '<', '>', '#', '"', '{', '}', '|', '\\', '^', '[', ']', '`':
		return false
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
