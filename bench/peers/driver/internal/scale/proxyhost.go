package scale

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// A scale run puts each Cluster behind its own fault proxy, and a proxy
// holds three file descriptors while its cluster is connected (its
// listener, the peer's connection, its own to the apiserver): 10,000
// Clusters would need 30,000 in one process, above this machine's limit of
// 20,000 (ulimit -n). So the proxies live in proxy hosts: children of the
// driver (its own binary, run with proxyHostEnv set), each holding at most
// proxyHostCap() of them, driven over stdin and stdout one line at a time:
//
//	new TARGET    → ADDR        a proxy to TARGET (a loopback host:port)
//	mode I MODE   → ok          proxy I (creation order) switches to MODE (faultproxy's names)
//	accepted      → N0 N1 …     the connections each proxy has accepted
//	end of stdin                every proxy is closed, the host exits
//
// A command that fails is answered "error MESSAGE".

// ProxyHostEnv, set in the environment, makes the driver a proxy host.
const ProxyHostEnv = "BENCH_PEERS_PROXY_HOST"

// ServeProxyHost is a proxy host's main: it answers the commands on in
// on out until in ends, and returns the exit code.
func ServeProxyHost(in io.Reader, out io.Writer) int {
	var proxies []*faultproxy.Proxy
	defer func() {
		for _, p := range proxies {
			p.Close()
		}
	}()
	sc := bufio.NewScanner(in)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		fmt.Fprintln(w, proxyHostCommand(&proxies, sc.Text()))
		if err := w.Flush(); err != nil {
			return 1
		}
	}
	return 0
}

// proxyHostCommand runs one command on proxies and returns its answer.
func proxyHostCommand(proxies *[]*faultproxy.Proxy, line string) string {
	verb, arg, _ := strings.Cut(line, " ")
	switch verb {
	case "new":
		p, err := faultproxy.New(arg)
		if err != nil {
			return "error " + err.Error()
		}
		*proxies = append(*proxies, p)
		return p.Addr()
	case "mode":
		i, m, err := parseModeCommand(arg, len(*proxies))
		if err != nil {
			return "error " + err.Error()
		}
		(*proxies)[i].SetMode(m)
		return "ok"
	case "accepted":
		counts := make([]string, len(*proxies))
		for i, p := range *proxies {
			counts[i] = strconv.FormatUint(p.Accepted(), 10)
		}
		return strings.Join(counts, " ")
	}
	return fmt.Sprintf("error unknown command %q", verb)
}

// parseModeCommand reads "I MODE" of a mode command on n proxies.
func parseModeCommand(arg string, n int) (int, faultproxy.Mode, error) {
	is, name, _ := strings.Cut(arg, " ")
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("no proxy %q", is)
	}
	for m := faultproxy.Pass; m.String() != "unknown"; m++ {
		if m.String() == name {
			return i, m, nil
		}
	}
	return 0, 0, fmt.Errorf("unknown mode %q", name)
}

// proxyHost is the driver's end of one proxy host.
type proxyHost struct {
	mu   sync.Mutex
	in   io.WriteCloser
	out  *bufio.Reader
	n    int          // proxies created
	wait func() error // waits for the host to exit (after in is closed)
	kill func()
}

// startProxyHost starts a proxy host process.
func startProxyHost() (*proxyHost, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ProxyHostEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a proxy host: %w", err)
	}
	return &proxyHost{in: in, out: bufio.NewReader(out), wait: cmd.Wait, kill: func() { cmd.Process.Kill() }}, nil
}

// callLocked sends one command and returns its answer; h.mu is held.
func (h *proxyHost) callLocked(line string) (string, error) {
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		return "", fmt.Errorf("proxy host: %w", err)
	}
	ans, err := h.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("proxy host: %w", err)
	}
	ans = strings.TrimSuffix(ans, "\n")
	if msg, ok := strings.CutPrefix(ans, "error "); ok {
		return "", fmt.Errorf("proxy host: %s", msg)
	}
	return ans, nil
}

func (h *proxyHost) call(line string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.callLocked(line)
}

// setMode switches proxy i to m.
func (h *proxyHost) setMode(i int, m faultproxy.Mode) error {
	_, err := h.call(fmt.Sprintf("mode %d %s", i, m))
	return err
}

// accepted returns how many connections each proxy has accepted.
func (h *proxyHost) accepted() ([]uint64, error) {
	ans, err := h.call("accepted")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for f := range strings.FieldsSeq(ans) {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("proxy host: accepted %q: %w", f, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// close ends the host (it closes its proxies) and waits for it, 30 s at
// most.
func (h *proxyHost) close() {
	h.in.Close()
	done := make(chan error, 1)
	go func() { done <- h.wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		h.kill()
		<-done
	}
}

// proxyHostCap is how many proxies one host holds: three descriptors each
// within the process's limit, less a reserve.
func proxyHostCap() int {
	return max(1, (fdLimit()-256)/3)
}

// fdLimit is the process's hard limit of open files (Go raises the soft
// limit to it), 1024 if it cannot be read.
func fdLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Max > 1<<30 {
		return 1024
	}
	return int(l.Max)
}

// proxyRef is where a cluster's proxy lives.
type proxyRef struct {
	host *proxyHost
	i    int
}

// proxyHosts places proxies in hosts, starting one when the last is full.
type proxyHosts struct {
	mu    sync.Mutex
	cap   int
	hosts []*proxyHost
}

// add creates a proxy to target in a host with room.
func (ph *proxyHosts) add(target string) (proxyRef, string, error) {
	ph.mu.Lock()
	if len(ph.hosts) == 0 || ph.hosts[len(ph.hosts)-1].size() >= ph.cap {
		h, err := startProxyHost()
		if err != nil {
			ph.mu.Unlock()
			return proxyRef{}, "", err
		}
		ph.hosts = append(ph.hosts, h)
	}
	h := ph.hosts[len(ph.hosts)-1]
	h.mu.Lock() // taken before ph.mu is let go: h.n counts this proxy before anyone else looks
	ph.mu.Unlock()
	defer h.mu.Unlock()
	addr, err := h.callLocked("new " + target)
	if err != nil {
		return proxyRef{}, "", err
	}
	h.n++
	return proxyRef{host: h, i: h.n - 1}, addr, nil
}

func (h *proxyHost) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// accepted returns the connections each of refs' proxies has accepted.
func (ph *proxyHosts) accepted(refs []proxyRef) ([]uint64, error) {
	ph.mu.Lock()
	hosts := append([]*proxyHost(nil), ph.hosts...)
	ph.mu.Unlock()
	counts := map[*proxyHost][]uint64{}
	for _, h := range hosts {
		c, err := h.accepted()
		if err != nil {
			return nil, err
		}
		counts[h] = c
	}
	out := make([]uint64, len(refs))
	for i, r := range refs {
		c := counts[r.host]
		if r.i >= len(c) {
			return nil, errors.New("proxy host: a proxy is missing from its accepted counts")
		}
		out[i] = c[r.i]
	}
	return out, nil
}

// close ends every host.
func (ph *proxyHosts) close() {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	for _, h := range ph.hosts {
		h.close()
	}
	ph.hosts = nil
}
