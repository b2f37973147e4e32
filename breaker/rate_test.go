package breaker

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// play records outcomes ('S' Success, 'F' Failure, 'R' RateFailure, '.'
// a tenth of a second passing) on a closed breaker and returns the index
// of the outcome that opened it, or -1.
func play(t *testing.T, b *Breaker, pattern string) int {
	t.Helper()
	for i, c := range pattern {
		o := map[rune]Outcome{'S': Success, 'F': Failure, 'R': RateFailure}[c]
		if c == '.' {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if tr, ok := record(t, b, o); ok {
			if tr.To != StateOpen {
				t.Fatalf("outcome %d (%c): %+v", i, c, tr)
			}
			return i
		}
	}
	return -1
}

// The trip rule with the default settings (failures >= 50 % of >= 20
// outcomes within 10 s, rolling by 1 s; 3 Failures in a row).
func TestRateRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern string
		opensAt int // index of the outcome that opens it; -1: never
	}{
		{"60% 5xx interleaved, never 3 in a row, opens at the first failure past 20 outcomes",
			strings.Repeat("RRSRS", 8), 20},
		{"20% failures never open", strings.Repeat("SSSSR", 40), -1},
		{"40% never opens", strings.Repeat("RSRSS", 20), -1},
		{"50% with 18 outcomes is too few", strings.Repeat("RS", 9), -1},
		{"50% at 20 outcomes opens", strings.Repeat("RS", 9) + "SR", 19},
		{"10 of 21 is below 50%", strings.Repeat("RS", 9) + "SSR", -1},
		{"rate failures in a row are no row", "RRRRR", -1},
		{"3 Failures in a row open", "SFFF", 3},
		{"a rate failure does not break a row", "FRFRF", 4},
		{"a success breaks a row", "FFSFF", -1},
		{"failures forgotten after the window", strings.Repeat("R", 15) + strings.Repeat(".", 101) + strings.Repeat("SR", 3), -1},
		{"the oldest tenth rolls out", strings.Repeat("R", 12) + strings.Repeat(".", 105) + strings.Repeat("S", 7) + "R", -1},
		{"failures within the window count", strings.Repeat("R", 12) + strings.Repeat(".", 85) + strings.Repeat("S", 7) + "R", 104},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Settings{DisableJitter: true})
				if got := play(t, b, tc.pattern); got != tc.opensAt {
					t.Fatalf("opened at outcome %d, want %d (%v)", got, tc.opensAt, b.Snapshot())
				}
			})
		})
	}
}

// The rate rule's settings, and DisableFailureRate.
func TestRateSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{FailureRate: 0.25, MinRequests: 4, Window: time.Second})
		// The window starts at the first failure: 2 of its 4, not 2 of 10.
		if got := play(t, b, "SSSSSSRSSR"); got != 9 {
			t.Fatalf("opened at %d, want 9", got)
		}
		b = mustNew(t, Settings{DisableFailureRate: true})
		if got := play(t, b, strings.Repeat("R", 50)+"FFF"); got != 52 {
			t.Fatalf("rule off: opened at %d, want only by the row (52)", got)
		}
		if s := b.Snapshot(); s.WindowRequests != 0 {
			t.Fatalf("rule off: window %+v", s)
		}
	})
	for _, tc := range []struct {
		s     Settings
		field string
	}{
		{Settings{FailureRate: 1.5}, "FailureRate"},
		{Settings{FailureRate: -0.5}, "FailureRate"},
		{Settings{Window: -time.Second}, "Window"},
		{Settings{Window: 5}, "Window"},
		{Settings{Window: MaxDuration + 1}, "Window"},
	} {
		if _, err := New(tc.s); !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), tc.field+"=") {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.s, err, tc.field)
		}
	}
	if z := (Settings{}).withDefaults(); z.FailureRate != 0.5 || z.MinRequests != 20 || z.Window != 10*time.Second {
		t.Errorf("zero Settings defaults: %+v", z)
	}
}
