package kube

import (
	"testing"

	"github.com/clusterpool/clusterpool/internal/lockdoc"
)

// Every mutex of the package, and of the internal packages that hold
// kube's mechanisms, appears in the lock order of that package's
// documentation, and every …Locked function's doc names the lock it needs.
func TestLockOrderIsDocumented(t *testing.T) {
	for dir, min := range map[string]int{".": 3, "../internal/watchgzip": 1, "../internal/restmapper": 1} {
		problems, err := lockdoc.Check(dir, min)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", dir, p)
		}
	}
}
