package lockdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write makes a package of files in a temporary directory.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const src = `package p

import "sync"

type a struct{ mu sync.Mutex }

type b struct{ rw sync.RWMutex }

var names = struct {
	sync.Mutex
	n int
}{}

// stepLocked needs it. Needs a.mu.
func stepLocked() {}
`

func TestCheckAcceptsADocumentedOrder(t *testing.T) {
	dir := write(t, map[string]string{"p.go": src, "doc.go": "// Locks:\n//\n//  1. a.mu: x\n//  2. b.rw: y\n//  3. names.Mutex: z\npackage p\n",
		"p_test.go": "package p\n\nimport \"sync\"\n\ntype t struct{ mu sync.Mutex }\n"})
	problems, err := Check(dir, 3)
	if err != nil || len(problems) != 0 {
		t.Fatalf("Check = %q, %v; want nothing", problems, err)
	}
}

func TestCheckReportsWhatTheOrderMisses(t *testing.T) {
	dir := write(t, map[string]string{"p.go": src + "\n// otherLocked has no lock named.\nfunc otherLocked() {}\n",
		"doc.go": "// Locks:\n//\n//  1. a.mu: x\npackage p\n"})
	problems, err := Check(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"b.rw is not", "names.Mutex is not", "otherLocked's doc", "lists 1 locks"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), got)
	}
}

func TestCheckNeedsADoc(t *testing.T) {
	if _, err := Check(write(t, map[string]string{"p.go": src}), 0); err == nil {
		t.Fatal("Check of a package without doc.go: no error")
	}
}
