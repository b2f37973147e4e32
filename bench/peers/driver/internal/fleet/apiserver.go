package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// APIServerProc is one of the fleet's kube-apiservers as a process: the
// chaos run stops, continues, kills and starts it again (same command
// line: same port, certificates and etcd, whose data survives).
type APIServerProc struct {
	host string // host:port, for /readyz
	ca   []byte // the CA of its serving certificate (rest.Config.CAData)
	path string
	args []string

	mu      sync.Mutex
	pid     int
	cmd     *exec.Cmd     // ours, once started again
	exited  chan struct{} // closed when cmd exits
	stopped bool          // SIGSTOPped
}

// FindAPIServer finds the kube-apiserver child of this process serving
// cfg.Host.
func FindAPIServer(cfg *rest.Config) (*APIServerProc, error) {
	host := hostOf(cfg.Host)
	u, err := url.Parse("https://" + host)
	if err != nil {
		return nil, err
	}
	flag := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || ParentOf(pid) != os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "kube-apiserver" && containsArg(args[1:], flag) {
			return &APIServerProc{host: host, ca: cfg.CAData, path: args[0], args: args[1:], pid: pid}, nil
		}
	}
	return nil, fmt.Errorf("no kube-apiserver child serving %s", host)
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// ParentOf is pid's parent pid (0 if unknown).
func ParentOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// Signal sends sig to the apiserver.
func (a *APIServerProc) Signal(sig syscall.Signal) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sig == syscall.SIGSTOP || sig == syscall.SIGCONT {
		a.stopped = sig == syscall.SIGSTOP
	}
	if err := syscall.Kill(a.pid, sig); err != nil {
		return err
	}
	if sig == syscall.SIGSTOP {
		waitStopped(a.pid)
	}
	return nil
}

// waitStopped waits, at most 5 s, until every thread of pid is stopped: a
// SIGSTOP stops a process's threads one by one, and on a loaded machine a
// running thread may still answer a request after kill returned.
func waitStopped(pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if allStopped(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allStopped reports whether every thread in /proc/pid/task is in state T
// (stopped) or t (traced); false if they cannot be read.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "stat"))
		if err != nil {
			return false
		}
		// "pid (comm) S ...": the state follows the last ')'.
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 || i+2 >= len(raw) || (raw[i+2] != 'T' && raw[i+2] != 't') {
			return false
		}
	}
	return true
}

// Kill kills the apiserver and waits until it is gone.
func (a *APIServerProc) Kill() error {
	a.mu.Lock()
	pid, exited := a.pid, a.exited
	a.stopped = false
	a.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if exited != nil {
			select {
			case <-exited:
				return nil
			case <-time.After(30 * time.Second):
				return fmt.Errorf("kube-apiserver %d did not exit", pid)
			}
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil || ParentOf(pid) != os.Getpid() {
			return nil // reaped by envtest
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver %d did not exit", pid)
}

// Start starts the apiserver again with its command line and waits until
// it is ready (2 minutes at most).
func (a *APIServerProc) Start(ctx context.Context) error {
	cmd := exec.Command(a.path, a.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	a.mu.Lock()
	a.pid, a.cmd, a.exited = cmd.Process.Pid, cmd, exited
	a.mu.Unlock()
	return waitReady(ctx, a.host, a.ca, exited)
}

// waitReady polls https://host/readyz, verified against ca, until it
// answers 200.
func waitReady(ctx context.Context, host string, ca []byte, exited <-chan struct{}) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return fmt.Errorf("kube-apiserver %s: no CA certificate to verify it with", host)
	}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := c.Get("https://" + host + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("kube-apiserver %s exited while starting", host)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver %s not ready after 2 minutes", host)
}

// Close continues a stopped apiserver and stops one this run started (an
// envtest-started one is envtest's to stop).
func (a *APIServerProc) Close() {
	a.mu.Lock()
	cmd, exited, stopped, pid := a.cmd, a.exited, a.stopped, a.pid
	a.mu.Unlock()
	if stopped {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// hostOf is a URL's host:port.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}
