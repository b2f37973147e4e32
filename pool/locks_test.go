package pool

import (
	"testing"

	"github.com/clusterpool/clusterpool/internal/lockdoc"
)

// Every mutex of the package appears in the lock order of the package
// documentation (as "type.field"), and every …Locked function's doc names
// the lock it needs ("Needs <lock>" or "with <lock> held"), one of those.
func TestLockOrderIsDocumented(t *testing.T) {
	problems, err := lockdoc.Check(".", 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
