package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// procSample is a sample and the peer process (its start's number) that
// wrote it.
type procSample struct {
	Proc int
	protocol.ChaosSample
}

// peerProc runs the capi peer in -chaos mode, and again after it is
// killed; every process's samples go to Samples.
type peerProc struct {
	bin  string
	args []string
	env  []string  // added to the driver's environment
	log  io.Writer // the processes' stderr

	Samples chan procSample

	mu      sync.Mutex
	cur     *peerRun
	starts  int
	crashes []string // processes that exited on their own
}

// peerRun is one process.
type peerRun struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ending atomic.Bool // killed or stopped by the driver
	done   chan struct{}
}

func newPeerProc(bin string, args []string, log io.Writer) *peerProc {
	return &peerProc{bin: bin, args: args, log: log, Samples: make(chan procSample, 4096)}
}

// start starts a process.
func (pp *peerProc) start() error {
	cmd := exec.Command(pp.bin, pp.args...)
	cmd.Env = append(os.Environ(), pp.env...)
	cmd.Stderr = pp.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the capi peer: %w", err)
	}
	run := &peerRun{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	pp.mu.Lock()
	pp.starts++
	n := pp.starts
	pp.cur = run
	pp.mu.Unlock()
	go pp.read(n, run, stdout)
	return nil
}

// read passes the process's samples on until its output ends, then
// waits for it and records a crash if the driver did not end it.
func (pp *peerProc) read(n int, run *peerRun, stdout io.Reader) {
	defer close(run.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var s protocol.ChaosSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			fmt.Fprintf(os.Stderr, "bench-chaos: peer line not a sample: %v\n", err)
			continue
		}
		pp.Samples <- procSample{Proc: n, ChaosSample: s}
	}
	err := run.cmd.Wait()
	if !run.ending.Load() {
		pp.mu.Lock()
		pp.crashes = append(pp.crashes, fmt.Sprintf("process %d exited by itself at %s: %v", n, time.Now().UTC().Format(time.RFC3339), err))
		pp.mu.Unlock()
	}
}

// current is the running process (nil before the first start).
func (pp *peerProc) current() *peerRun {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.cur
}

// kill kills the process and waits for it.
func (pp *peerProc) kill() {
	run := pp.current()
	if run == nil {
		return
	}
	run.ending.Store(true)
	run.cmd.Process.Kill()
	<-run.done
}

// restartIfCrashed starts a process again if the last one exited by
// itself (it is recorded as a crash).
func (pp *peerProc) restartIfCrashed() error {
	run := pp.current()
	if run == nil || run.ending.Load() {
		return nil
	}
	select {
	case <-run.done:
		return pp.start()
	default:
		return nil
	}
}

// askFull asks the process for a full sample.
func (pp *peerProc) askFull() {
	if run := pp.current(); run != nil {
		io.WriteString(run.stdin, "full\n")
	}
}

// stop ends the process (stdin closed; killed after 20 s).
func (pp *peerProc) stop() {
	run := pp.current()
	if run == nil {
		return
	}
	run.ending.Store(true)
	run.stdin.Close()
	select {
	case <-run.done:
	case <-time.After(20 * time.Second):
		run.cmd.Process.Kill()
		<-run.done
	}
}

// crashed returns the processes that exited by themselves.
func (pp *peerProc) crashed() []string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return append([]string(nil), pp.crashes...)
}
