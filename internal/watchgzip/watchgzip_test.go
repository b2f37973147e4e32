package watchgzip

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	m := &members{body: pr}
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
	m := &members{body: body}
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
		m := &members{body: io.NopCloser(bytes.NewReader(body))}
		_, err := io.ReadAll(m)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, again := m.Read(make([]byte, 1)); again != err {
			t.Errorf("%s: Read after %v: %v, want the same error", name, err, again)
		}
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
	for _, tc := range []struct {
		url, accept string
	}{{"https://h/api/v1/nodes", ""}, {"https://h/api/v1/nodes?watch=false", ""}, {"https://h/api/v1/nodes?watch=true", "identity"}} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		if tc.accept != "" {
			req.Header.Set("Accept-Encoding", tc.accept)
		}
		resp, err := RoundTrip(next, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Body.(*members); ok || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: response rewritten", tc.url)
		}
		if got := seen[len(seen)-1]; got != tc.accept {
			t.Errorf("%s: Accept-Encoding %q, want %q", tc.url, got, tc.accept)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://h/api/v1/nodes?watch=1", nil)
	resp, err := RoundTrip(next, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(*members); !ok || resp.Header.Get("Content-Encoding") != "" || seen[len(seen)-1] != "gzip" {
		t.Error("a watch was not decompressed member by member")
	}
	if req.Header.Get("Accept-Encoding") != "" {
		t.Error("the caller's request was changed")
	}
	if !errors.Is(resp.Body.Close(), nil) {
		t.Error("Close")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
