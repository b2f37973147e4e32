package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gzipMember compresses s as one gzip member.
func gzipMember(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGzipMembersReadsAll feeds members through a pipe, one write each as
// an apiserver flushes them, and reads them back whole.
func TestGzipMembersReadsAll(t *testing.T) {
	pr, pw := io.Pipe()
	m := &gzipMembers{body: pr}
	events := []string{"first event", strings.Repeat("a large event ", 2000), "third"}
	go func() {
		for _, e := range events {
			if _, err := pw.Write(gzipMember(t, e)); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	got, err := io.ReadAll(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.Join(events, "") {
		t.Fatalf("read %d bytes, want the %d of the events", len(got), len(strings.Join(events, "")))
	}
	if m.zr != nil || m.src != nil {
		t.Fatal("the reader or buffer is still held at the body's end")
	}
}

// blockingBody returns data, then, on the next Read, reports on waiting
// and blocks until closed.
type blockingBody struct {
	data    *bytes.Reader
	waiting chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.data.Len() > 0 {
		return b.data.Read(p)
	}
	b.waiting <- struct{}{}
	<-b.closed
	return 0, io.ErrClosedPipe
}

func (b *blockingBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// TestGzipMembersIdleHoldsNothing: while it waits for the next member,
// the reader holds neither decompressor nor buffer; Close ends the wait.
func TestGzipMembersIdleHoldsNothing(t *testing.T) {
	body := &blockingBody{data: bytes.NewReader(gzipMember(t, "event")), waiting: make(chan struct{}), closed: make(chan struct{})}
	m := &gzipMembers{body: body}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(m)
		done <- err
	}()
	<-body.waiting // the Read waits in the body, for the next member
	if m.zr != nil || m.src != nil {
		t.Fatal("an idle body holds the reader or buffer")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("Read ended by Close: no error")
	}
	if n, err := m.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("Read after Close: %d, %v", n, err)
	}
}

func TestGzipMembersErrors(t *testing.T) {
	member := gzipMember(t, "event")
	corrupt := append([]byte(nil), member...)
	corrupt[len(corrupt)-5] ^= 0xff // the CRC-32
	for name, body := range map[string][]byte{
		"cut header": member[:4],
		"cut member": member[:len(member)-3],
		"checksum":   corrupt,
		"not gzip":   []byte("plain text"),
	} {
		m := &gzipMembers{body: io.NopCloser(bytes.NewReader(body))}
		_, err := io.ReadAll(m)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, again := m.Read(make([]byte, 1)); again != err {
			t.Errorf("%s: Read after %v: %v, want the same error", name, err, again)
		}
	}
}

// TestWatchGzipOnRealWatch: the apiserver's compressed watch (WatchList)
// reaches the informer through watchGzip, events after the initial list
// included.
func TestWatchGzipOnRealWatch(t *testing.T) {
	needEnvtest(t)
	var mu sync.Mutex
	var encodings []string
	src := transportSource{ConfigSource: serversSource(), wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && isWatch(req) {
				mu.Lock()
				encodings = append(encodings, resp.Header.Get("Content-Encoding"))
				mu.Unlock()
			}
			return resp, err
		})
	}}
	d := newTestDialer(t, src, DialerOptions{WatchTypes: []client.Object{&corev1.ConfigMap{}}})
	c := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "gzip"})
	mu.Lock()
	if len(encodings) == 0 || encodings[0] != "gzip" {
		t.Fatalf("watch responses' Content-Encoding: %q, want gzip (the path under test)", encodings)
	}
	mu.Unlock()

	ctx := context.Background()
	inf, err := c.Cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	const name = "watch-gzip"
	added := make(chan struct{}, 1)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == name {
			added <- struct{}{}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.RemoveEventHandler(reg)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"k": "v"}}
	if err := c.Uncached.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Uncached.Delete(context.Background(), cm); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-added:
	case <-time.After(30 * time.Second):
		t.Fatal("the ConfigMap created after the sync never reached the informer")
	}
}

// TestWatchGzipLeavesOthersAlone: requests other than watches, and watches
// that set their own Accept-Encoding, go through unchanged.
func TestWatchGzipLeavesOthersAlone(t *testing.T) {
	var seen []string
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		seen = append(seen, req.Header.Get("Accept-Encoding"))
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: http.NoBody}, nil
	})
	wg := &watchGzip{next: next}
	for _, tc := range []struct {
		url, accept string
	}{{"https://h/api/v1/nodes", ""}, {"https://h/api/v1/nodes?watch=false", ""}, {"https://h/api/v1/nodes?watch=true", "identity"}} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		if tc.accept != "" {
			req.Header.Set("Accept-Encoding", tc.accept)
		}
		resp, err := wg.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Body.(*gzipMembers); ok || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: response rewritten", tc.url)
		}
		if got := seen[len(seen)-1]; got != tc.accept {
			t.Errorf("%s: Accept-Encoding %q, want %q", tc.url, got, tc.accept)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://h/api/v1/nodes?watch=1", nil)
	resp, err := wg.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(*gzipMembers); !ok || resp.Header.Get("Content-Encoding") != "" || seen[len(seen)-1] != "gzip" {
		t.Error("a watch was not decompressed member by member")
	}
	if req.Header.Get("Accept-Encoding") != "" {
		t.Error("the caller's request was changed")
	}
	if !errors.Is(resp.Body.Close(), nil) {
		t.Error("Close")
	}
}

// idleCounter is a RoundTripper that counts CloseIdleConnections calls.
type idleCounter struct {
	http.RoundTripper
	closed int
}

func (c *idleCounter) CloseIdleConnections() { c.closed++ }

// closeIdle sees through watchGzip to the transport below: the request
// guard's tests and the rotation's closing of the old credentials'
// connections depend on it.
func TestWatchGzipPassesCloseIdle(t *testing.T) {
	below := &idleCounter{}
	closeIdle(&http.Client{Transport: &guardedTransport{next: &watchGzip{next: below}}})
	if below.closed != 1 {
		t.Fatalf("CloseIdleConnections reached the transport below %d times, want 1", below.closed)
	}
}
