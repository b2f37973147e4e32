package proptest

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestVirtualTime(t *testing.T) {
	Check(t, func(rt *rapid.T) {
		d := time.Duration(rapid.IntRange(1, 3600).Draw(rt, "s")) * time.Second
		start := time.Now()
		time.Sleep(d)
		if got := time.Since(start); got != d {
			rt.Fatalf("slept %v, want exactly %v", got, d)
		}
	})
}

func TestRepeat(t *testing.T) {
	Check(t, func(rt *rapid.T) {
		n := 0
		rt.Repeat(map[string]func(*rapid.T){
			"inc":   func(rt *rapid.T) { n += rapid.IntRange(1, 3).Draw(rt, "k") },
			"sleep": func(rt *rapid.T) { time.Sleep(time.Second) },
			"":      func(rt *rapid.T) {},
		})
	})
}
