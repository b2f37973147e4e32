package kube

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rotationServer is a TLS server that answers any bearer token: a watch
// (?watch=true) streams until the client goes, /hang never answers (it
// aborts when the client goes), anything else answers 200.
// It counts the connections it accepted, and says when /hang arrived.
func rotationServer(t *testing.T) (cfgFor func(token string) *rest.Config, conns *atomic.Int32, hung <-chan struct{}) {
	t.Helper()
	conns = new(atomic.Int32)
	hang := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("watch") == "true":
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/hang":
			hang <- struct{}{}
			<-r.Context().Done()
			// The context ends when the client closes the connection (HTTP/1.1
			// here), and tls.Conn.Close sends close_notify before it closes
			// the socket: a 200 written now can reach the client, whose
			// transport then prefers it to its own cancel. Answer nothing.
			panic(http.ErrAbortHandler)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return func(token string) *rest.Config {
		return &rest.Config{Host: srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	}, conns, hang
}

// get sends GET path through r and reads the answer to the end.
func get(t *testing.T, r *rotator, url string) {
	t.Helper()
	resp, err := (&http.Client{Transport: r}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// A token change is a header swap: the next request goes on the
// connection the old token used, through the same transport.
func TestTokenRotationKeepsTheConnection(t *testing.T) {
	cfgFor, conns, _ := rotationServer(t)
	r, err := newRotator(client.ObjectKey{Name: "c"}, &swappableSource{}, cfgFor("t1"), "1", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.CloseAll()
	host := cfgFor("").Host
	get(t, r, host+"/api")
	before := r.WrappedRoundTripper()
	if out, err := r.apply(cfgFor("t2"), "2"); out != rotationInPlace || err != nil {
		t.Fatalf("apply = %v, %v", out, err)
	}
	get(t, r, host+"/api")
	if r.WrappedRoundTripper() != before || conns.Load() != 1 {
		t.Errorf("after a token change: same transport %v, %d connections, want the same and 1",
			r.WrappedRoundTripper() == before, conns.Load())
	}
}

// A retired generation whose watch is younger than minStreamAge waits on a
// timer; closing the rotator ends the watch with io.EOF and stops that
// timer.
func TestCloseStopsTheGenerationsTimer(t *testing.T) {
	cfgFor, _, _ := rotationServer(t)
	r, err := newRotator(client.ObjectKey{Name: "c"}, &swappableSource{}, cfgFor("t1"), "1", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := r.cur.Load()
	resp, err := (&http.Client{Transport: r}).Get(cfgFor("").Host + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := r.apply(cfgFor("t2"), "2"); err != nil {
		t.Fatal(err)
	}
	old.mu.Lock()
	pending := old.timer != nil
	old.mu.Unlock()
	if !pending {
		t.Fatal("the retired generation has no timer for its young watch")
	}
	r.CloseAll()
	if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("the watch read %d, %v after close, want io.EOF", n, err)
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if old.timer.Stop() || phase(old.phase.Load()) != phaseClosed {
		t.Errorf("after close: timer still pending, or phase %d, want closed", old.phase.Load())
	}
}

// A request still in flight on a retired generation after grace ends, as
// it did when the old credentials' connections closed: here the token's
// connection stays, for the new token's requests.
func TestRequestOnOldTokenEndsAfterGrace(t *testing.T) {
	cfgFor, _, hung := rotationServer(t)
	r, err := newRotator(client.ObjectKey{Name: "c"}, &swappableSource{}, cfgFor("t1"), "1", 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.CloseAll()
	ended := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: r}).Get(cfgFor("").Host + "/hang")
		if err == nil { // say what answered
			err = fmt.Errorf("answered %s %q", resp.Proto, resp.Status)
			resp.Body.Close()
		}
		ended <- err
	}()
	<-hung
	if _, err := r.apply(cfgFor("t2"), "2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, errCredentialsClosed) {
			t.Errorf("the request on the old token ended with %v, want errCredentialsClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request on the old token outlived grace (100 ms) by 20 s")
	}
	get(t, r, cfgFor("").Host+"/api") // the new token's requests still work
}
