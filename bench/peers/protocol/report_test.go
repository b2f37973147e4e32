package protocol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"date":"d","machine":"m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"date":`), 0o600); err != nil {
		t.Fatal(err)
	}
	var rep struct{ Date, Machine string }
	if err := ReadReport(good, &rep); err != nil || rep.Date != "d" || rep.Machine != "m" {
		t.Fatalf("good: %+v, %v", rep, err)
	}
	if err := ReadReport(bad, &rep); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Fatalf("bad: %v, want an error naming %s", err, bad)
	}
	if err := ReadReport(filepath.Join(dir, "none.json"), &rep); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}
