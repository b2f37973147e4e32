package opt

import (
	"testing"
	"time"
)

func TestFirstNegative(t *testing.T) {
	if err := FirstNegative("x: ", F("A", 1), F("B", time.Duration(0))); err != nil {
		t.Fatal(err)
	}
	err := FirstNegative("x: ", F("A", 1), F("B", -time.Second), F("C", -1))
	if err == nil || err.Error() != "x: B=-1s must not be negative" {
		t.Fatalf("got %v", err)
	}
}

func TestDefault(t *testing.T) {
	a, b := 0, 5
	Default(&a, 3)
	Default(&b, 3)
	if a != 3 || b != 5 {
		t.Fatalf("a=%d b=%d", a, b)
	}
}
