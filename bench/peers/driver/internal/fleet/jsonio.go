package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// WriteJSON writes v as indented JSON to file, unless file is empty.
func WriteJSON(file string, v any) error {
	return WriteJSONAs(file, v, true)
}

// WriteJSONAs writes v to file, unless file is empty: indented, or compact
// (a chaos run's report: an hour's series and fault histories stay under
// the 1 MiB that make lint allows a tracked file).
func WriteJSONAs(file string, v any, indent bool) error {
	if file == "" {
		return nil
	}
	var data []byte
	var err error
	if indent {
		data, err = json.MarshalIndent(v, "", " ")
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// Machine names the CPU, core count and Go version.
func Machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d vCPU %q, %s/%s, %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// MiB is b bytes in mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// Stamp opens every report: when the run started and on what machine.
// Reports embed it first, so that their JSON starts with date and machine.
type Stamp struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
}

// NewStamp is the Stamp of a run started at start, on this machine.
func NewStamp(start time.Time) Stamp {
	return Stamp{Date: start.UTC().Format(time.RFC3339), Machine: Machine()}
}
