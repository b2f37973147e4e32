package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long the workers run")
	workers := flag.Int("workers", 10, "worker goroutines")
	flag.Parse()
	if _, err := run(os.Stdout, *duration, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "herd:", err)
		os.Exit(1)
	}
}

// stats counts what the workers saw for one cluster.
type stats struct {
	ok, timeout, rejected, failed, dials atomic.Int64
	blocked                              atomic.Int64 // nanoseconds workers spent in Get
}

// run drives the workers for duration, printing a table to out every two
// seconds and at the end, and returns what they saw per cluster.
func run(out io.Writer, duration time.Duration, workers int) (map[string]*stats, error) {
	clusters, stop, err := startClusters()
	if err != nil {
		return nil, err
	}
	defer stop()
	names := make([]string, 0, len(clusters))
	for n := range clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	st := map[string]*stats{}
	for _, n := range names {
		st[n] = &stats{}
	}

	dial := func(ctx context.Context, name string) (net.Conn, error) {
		st[name].dials.Add(1)
		return ping(ctx, clusters[name].Addr())
	}
	p, err := pool.New(dial, pool.Options[string, net.Conn]{
		DialTimeout: time.Second,
		Breaker:     breaker.Settings{OpenTimeout: time.Second, MaxOpenTimeout: 4 * time.Second},
		OnClose:     func(_ string, c net.Conn) { c.Close() },
	})
	if err != nil {
		return nil, err
	}
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				name := names[int(next.Add(1))%len(names)]
				s := st[name]
				start := time.Now()
				conn, err := p.Get(ctx, name)
				s.blocked.Add(int64(time.Since(start)))
				switch {
				case err == nil:
					s.ok.Add(1)
					if err := use(conn); err != nil {
						p.Report(name, err) // passive health: feeds the breaker
					}
				case errors.Is(err, pool.ErrWaitTimeout):
					s.timeout.Add(1)
				case errors.Is(err, pool.ErrCircuitOpen):
					s.rejected.Add(1)
				default:
					s.failed.Add(1)
				}
				time.Sleep(time.Millisecond) // the rest of a reconcile
			}
		})
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			done = true
		}
		table(out, p, names, st, done)
	}
	wg.Wait()
	return st, nil
}

func table(out io.Writer, p *pool.Pool[string, net.Conn], names []string, st map[string]*stats, final bool) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	title := time.Now().Format("15:04:05")
	if final {
		title = "summary"
	}
	fmt.Fprintf(w, "%s\tbreaker\tconnected\tok\ttimeouts\trejected\tfailed\tdials\tms blocked/get\t\n", title)
	for _, n := range names {
		s, cs := st[n], p.State(n)
		gets := s.ok.Load() + s.timeout.Load() + s.rejected.Load() + s.failed.Load()
		per := 0.0
		if gets > 0 {
			per = float64(s.blocked.Load()) / float64(gets) / 1e6
		}
		fmt.Fprintf(w, "%s\t%v\t%v\t%d\t%d\t%d\t%d\t%d\t%.3f\t\n", n, cs.Breaker, cs.Connected,
			s.ok.Load(), s.timeout.Load(), s.rejected.Load(), s.failed.Load(), s.dials.Load(), per)
	}
	fmt.Fprintln(w)
	w.Flush()
}

// ping dials addr and does one request-response under ctx.
func ping(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if err := roundTrip(c); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

var connMu sync.Map // net.Conn -> *sync.Mutex: one request at a time per conn

// use is one request on an established connection, with its own timeout.
func use(c net.Conn) error {
	m, _ := connMu.LoadOrStore(c, &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	defer m.(*sync.Mutex).Unlock()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	return roundTrip(c)
}

func roundTrip(c net.Conn) error {
	if _, err := c.Write([]byte("PING\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "PONG\n" {
		return fmt.Errorf("unexpected answer %q", line)
	}
	return nil
}
