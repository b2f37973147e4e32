package fleet

import "time"

// Config is what every run shares.
type Config struct {
	Clusters int           `json:"clusters"`
	Objects  int           `json:"objects_per_cluster"`
	Workers  int           `json:"workers"`
	Work     time.Duration `json:"work_ns"`
	Bucket   time.Duration `json:"bucket_ns"`
	Seed     uint64        `json:"seed"`
	// Timings makes the peers record their reconciles' phases and
	// client-go's request timings (-timings).
	Timings bool `json:"timings,omitempty"`
}
