package watchgzip

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// stuckBody returns data, then blocks every Read until release is closed;
// unlike a connection, its Close does not end a Read waiting in it.
type stuckBody struct {
	data    *bytes.Reader
	waiting chan struct{} // receives once per Read that blocks
	release chan struct{}
}

func newStuckBody(data []byte) *stuckBody {
	return &stuckBody{data: bytes.NewReader(data), waiting: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *stuckBody) Read(p []byte) (int, error) {
	if b.data.Len() > 0 {
		return b.data.Read(p)
	}
	b.waiting <- struct{}{}
	<-b.release
	return 0, io.ErrClosedPipe
}

func (b *stuckBody) Close() error { return nil }

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// Issue 33, item 4: a zero-length Read returns (0, nil) at once, whether
// the body is between members (where the next member's first byte has not
// come) or in the middle of one (where the gzip reader returns (0, nil)
// forever for an empty buffer); reading goes on as before.
func TestGzipMembersZeroLengthRead(t *testing.T) {
	body := newStuckBody(gzipMember(t, "hello world"))
	m := &members{body: body}
	defer func() {
		close(body.release)
		if !t.Failed() { // else a Read may still spin with the lock held
			m.Close()
		}
	}()
	empty := func(where string) {
		t.Helper()
		within(t, 5*time.Second, "a zero-length Read "+where, func() {
			if n, err := m.Read(nil); n != 0 || err != nil {
				t.Errorf("zero-length Read %s: %d, %v; want 0, nil", where, n, err)
			}
		})
	}
	empty("before the first member")
	p := make([]byte, 5)
	if n, err := io.ReadFull(m, p); n != 5 || err != nil || string(p) != "hello" {
		t.Fatalf("Read: %d %q %v", n, p[:n], err)
	}
	empty("in the middle of a member")
	rest := make([]byte, 6)
	if n, err := io.ReadFull(m, rest); n != 6 || err != nil || string(rest) != " world" {
		t.Fatalf("Read after the zero-length one: %d %q %v", n, rest[:n], err)
	}
}

// Issue 33, item 4: Close never waits for a Read: with a Read blocked in a
// body whose Close does not end it, Close returns; the Read, once the body
// lets it go, gives the reader and buffer back and fails.
func TestGzipMembersCloseDuringBlockedRead(t *testing.T) {
	member := gzipMember(t, "an event")
	body := newStuckBody(member[:len(member)-4]) // the member's trailer has not come
	m := &members{body: body}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(m)
		done <- err
	}()
	<-body.waiting // the Read holds the member's reader and waits for the body
	within(t, 5*time.Second, "Close during a blocked Read", func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	close(body.release)
	if err := <-done; err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("the Read that Close interrupted ended with %v, want an error", err)
	}
	m.mu.Lock()
	held := m.zr != nil || m.src != nil
	m.mu.Unlock()
	if held {
		t.Fatal("the reader or buffer is still held after Close and the Read's end")
	}
	if n, err := m.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("Read after Close: %d, %v", n, err)
	}
}
