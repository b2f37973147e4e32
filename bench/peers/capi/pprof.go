package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// loopbackOnly refuses a -pprof address that is not on 127.0.0.1 or ::1
// (empty: none).
func loopbackOnly(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-pprof %q: want a loopback host:port, such as 127.0.0.1:0", addr)
	}
	return nil
}

// servePProf serves net/http/pprof on addr (none if empty) until ctx ends,
// and returns the address it listens on.
func servePProf(ctx context.Context, addr string) (string, error) {
	if addr == "" {
		return "", nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "capi: pprof:", err)
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return l.Addr().String(), nil
}
