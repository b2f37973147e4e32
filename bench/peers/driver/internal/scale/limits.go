package scale

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// scaleLimits decides, before each fleet size and peer, whether it fits
// the machine: memory (from what the smaller sizes measured), file
// descriptors, and time (a peer that did not connect every cluster within
// the bound runs no larger fleet).
type scaleLimits struct {
	fds int
	// memAvailable and fleetRSS read the machine (replaced in tests).
	memAvailable func() int64
	fleetRSS     func() int64
	// The fleet's resident set per Cluster, from its first size on.
	fleetAt      int
	fleetBytes   int64
	fleetPerClus float64
	// peak is each strategy's peak RSS per Cluster at its largest size
	// so far; conns its TCP connections per Cluster (most).
	peak    map[string]float64
	conns   map[string]int
	stopped map[string]string // strategy → why it runs no more
}

// memReserve is the memory left to the rest of the machine.
const memReserve = 1 << 30

// memMargin covers a peer's growth beyond its measured peak per Cluster.
const memMargin = 1.25

func newScaleLimits() *scaleLimits {
	return &scaleLimits{fds: fdLimit(), memAvailable: memAvailable, fleetRSS: fleetRSS,
		peak: map[string]float64{}, conns: map[string]int{}, stopped: map[string]string{}}
}

// fleetGrowth is how much more memory the fleet needs at n than now.
func (l *scaleLimits) fleetGrowth(n, now int) int64 {
	if l.fleetPerClus <= 0 || n <= now {
		return 0
	}
	return int64(l.fleetPerClus * float64(n-now) * memMargin)
}

// fleetFits returns why the fleet cannot grow from now to n Clusters ("":
// it can): its own growth and the smallest peer must fit in memory.
func (l *scaleLimits) fleetFits(n, now int) string {
	need := l.fleetGrowth(n, now)
	smallest := 0.0
	for _, p := range l.peak {
		if smallest == 0 || p < smallest {
			smallest = p
		}
	}
	need += int64(smallest * float64(n) * memMargin)
	if avail := l.memAvailable() - memReserve; need > avail {
		return fmt.Sprintf("memory: the fleet and the smallest peer would need ≈ %s, %s available", gib(need), gib(avail))
	}
	return ""
}

// fleetGrown notes the fleet's resident set at n Clusters.
func (l *scaleLimits) fleetGrown(n int) {
	rss := l.fleetRSS()
	if l.fleetAt > 0 && n > l.fleetAt && rss > l.fleetBytes {
		l.fleetPerClus = float64(rss-l.fleetBytes) / float64(n-l.fleetAt)
	}
	l.fleetAt, l.fleetBytes = n, rss
}

// peerFits returns why strategy s does not run on n Clusters ("": it
// does).
func (l *scaleLimits) peerFits(s string, n int, o scaleOptions) string {
	_, extra := o.Extra[s]
	switch {
	case l.stopped[s] != "":
		return l.stopped[s]
	case s == "cct" && n > o.CCTMax:
		return fmt.Sprintf("CCT runs up to %d Clusters (-cct-max)", o.CCTMax)
	case extra && o.PeerMax > 0 && n > o.PeerMax:
		return fmt.Sprintf("the -peer programs run up to %d Clusters (-peer-max)", o.PeerMax)
	}
	if need := max(1, l.conns[s])*n + 512; need > l.fds {
		return fmt.Sprintf("file descriptors: %d connections and more, the limit is %d", need, l.fds)
	}
	if p := l.peak[s]; p > 0 {
		need := int64(p * float64(n) * memMargin)
		if avail := l.memAvailable() - memReserve; need > avail {
			return fmt.Sprintf("memory: ≈ %s at its peak RSS per Cluster so far (%.0f KiB), %s available", gib(need), p/1024, gib(avail))
		}
	}
	return ""
}

// ran notes r: its peak per Cluster, its connections, and whether it
// connected every Cluster in time.
func (l *scaleLimits) ran(r scaleResult) {
	if r.PeakRSSBytes > 0 {
		l.peak[r.Strategy] = float64(r.PeakRSSBytes) / float64(r.Clusters)
	}
	l.conns[r.Strategy] = max(l.conns[r.Strategy], r.ConnsMax)
	if r.ConnectS < 0 {
		l.stopped[r.Strategy] = fmt.Sprintf("time: did not connect all %d Clusters within the bound (-connect)", r.Clusters)
	}
}

// failed stops strategy s after a run that failed with err.
func (l *scaleLimits) failed(s string, err error) {
	l.stopped[s] = fmt.Sprintf("its run failed before (%v)", err)
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// memAvailable is the machine's MemAvailable (/proc/meminfo) in bytes.
func memAvailable() int64 {
	return meminfoField("/proc/meminfo", "MemAvailable")
}

// procRSS is process pid's VmRSS in bytes (0 if gone).
func procRSS(pid int) int64 {
	return meminfoField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
}

// meminfoField reads a "Key: N kB" line of file, in bytes (0 if missing).
func meminfoField(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return 0
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		return kb << 10
	}
	return 0
}

// connsTo counts the established TCP connections of process pid to each
// of addrs (index = cluster), from /proc/PID/fd and /proc/PID/net/tcp*.
func connsTo(pid int, addrs []string) ([]int, error) {
	ports := make(map[int]int, len(addrs))
	for i, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(port)
		ports[n] = i
	}
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(addrs))
	for _, file := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil {
			continue
		}
		countEstablished(string(data), inodes, ports, counts)
	}
	return counts, nil
}
