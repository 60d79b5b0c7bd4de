package durablefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAppendJSONLineKeepsEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "calls")
	for _, v := range []any{map[string]string{"a": "1"}, []int{2}} {
		if err := AppendJSONLine(path, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\"a\":\"1\"}\n[2]\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	if err := AppendJSONLine(path, func() {}); err == nil {
		t.Error("a value JSON cannot encode was written")
	}
	if err := Write(filepath.Join(path, "below-a-file"), os.O_TRUNC, nil); err == nil {
		t.Error("writing below a file succeeded")
	}
}
