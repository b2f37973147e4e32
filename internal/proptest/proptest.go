package proptest

import (
	"testing"
	"testing/synctest"

	"pgregory.net/rapid"
)

// Check runs prop as rapid.Check does, each case in a fresh synctest bubble.
// prop must leave no goroutine of its bubble running (close what it opened,
// with defer, so that this holds when it fails too). A failure inside the
// bubble is carried out of it and reported to rapid, which shrinks it. The
// first failure is also logged as it happened: a case whose goroutines
// interleave differently on replay may not fail again, and rapid then
// reports only that its replay ran out of data.
func Check(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	logged := false
	rapid.Check(t, func(rt *rapid.T) {
		var failure any
		synctest.Test(t, func(*testing.T) {
			defer func() { failure = recover() }()
			prop(rt)
		})
		if failure != nil {
			if !logged {
				logged = true
				t.Logf("first failure: %v", failure)
			}
			panic(failure)
		}
	})
}
