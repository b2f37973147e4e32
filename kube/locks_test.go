package kube

import (
	"testing"

	"github.com/clusterpool/clusterpool/internal/lockdoc"
)

// Every mutex of the package appears in the lock order of the package
// documentation, and every …Locked function's doc names the lock it needs.
func TestLockOrderIsDocumented(t *testing.T) {
	problems, err := lockdoc.Check(".", 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
