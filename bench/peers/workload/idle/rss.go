package idle

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// RSS returns the process's resident set size and its peak (VmRSS and
// VmHWM of /proc/self/status) in bytes; zeros where /proc is missing.
func RSS() (now, peak int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			now = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return now, peak
}
