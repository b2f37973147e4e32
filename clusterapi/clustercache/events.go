package clustercache

import (
	"fmt"
	"time"
)

// shouldSendEvent is Cluster API's rule (cluster_cache.go:697-722) for
// sending a Cluster event to a source of GetClusterSource: on a connect, on
// a disconnect, and, for each WatchForProbeFailure duration d, once when
// lastProbeSuccess+d has passed and no event was sent since. It returns the
// reasons; none means no event.
func shouldSendEvent(now, lastProbeSuccess, lastEventSent time.Time, didConnect, didDisconnect bool, probeFailureDurations []time.Duration) []string {
	var reasons []string
	if didConnect {
		reasons = append(reasons, "connect")
	}
	if didDisconnect {
		reasons = append(reasons, "disconnect")
	}
	for _, d := range probeFailureDurations {
		at := lastProbeSuccess.Add(d)
		if lastEventSent.Before(at) && at.Before(now) {
			reasons = append(reasons, fmt.Sprintf("health probe didn't succeed since more than %s", d))
		}
	}
	return reasons
}
