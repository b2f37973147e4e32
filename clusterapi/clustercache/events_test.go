package clustercache

import (
	"slices"
	"testing"
	"time"
)

// TestShouldSendEvent ports Cluster API's TestShouldSentEvent
// (cluster_cache_test.go): the reasons for sending a Cluster event.
func TestShouldSendEvent(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name                       string
		lastProbeSuccess, lastSent time.Time
		didConnect, didDisconnect  bool
		durations                  []time.Duration
		want                       []string
	}{
		{name: "send event because of connect", lastProbeSuccess: now, lastSent: now.Add(-5 * time.Second),
			didConnect: true, want: []string{"connect"}},
		{name: "send event because of disconnect", lastProbeSuccess: now, lastSent: now.Add(-5 * time.Second),
			didDisconnect: true, want: []string{"disconnect"}},
		{name: "send event, last probe success is longer ago than failure duration",
			lastProbeSuccess: now.Add(-60 * time.Second), lastSent: now.Add(-40 * time.Second),
			durations: []time.Duration{21 * time.Second}, want: []string{"health probe didn't succeed since more than 21s"}},
		{name: "don't send event, last probe success is longer ago than failure duration, but an event was already sent",
			lastProbeSuccess: now.Add(-60 * time.Second), lastSent: now.Add(-39 * time.Second),
			durations: []time.Duration{21 * time.Second}},
		{name: "don't send event, last probe success is not longer ago than failure duration (event should be send in 1s)",
			lastProbeSuccess: now.Add(-60 * time.Second), lastSent: now.Add(-39 * time.Second),
			durations: []time.Duration{61 * time.Second}},
		{name: "never probed successfully: one event", durations: []time.Duration{time.Minute},
			want: []string{"health probe didn't succeed since more than 1m0s"}},
		{name: "several durations, each its own reason", lastProbeSuccess: now.Add(-60 * time.Second),
			lastSent: now.Add(-50 * time.Second), durations: []time.Duration{5 * time.Second, 20 * time.Second, 2 * time.Minute},
			didConnect: true, want: []string{"connect", "health probe didn't succeed since more than 20s"}},
		{name: "due exactly now: not yet", lastProbeSuccess: now.Add(-time.Minute), durations: []time.Duration{time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shouldSendEvent(now, tt.lastProbeSuccess, tt.lastSent, tt.didConnect, tt.didDisconnect, tt.durations)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("shouldSendEvent = %q, want %q", got, tt.want)
			}
		})
	}
}
