package kube

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The apiserver compresses a watch that streams its initial list
// (sendInitialEvents, client-go's default WatchList) when the client
// accepts gzip, and keeps compressing the stream for its whole life: each
// flush (each event, once the list is sent) is a gzip member of its own.
// Go's HTTP transports decompress it with one gzip.Reader per response,
// whose decompressor (a 32 KiB window and its tables) lives as
// long as the watch, idle or not: one per informer per cluster.
//
// watchGzip asks for gzip itself on watches, so that the transport leaves
// the body compressed, and decompresses it member by member with readers
// taken from a pool for the length of a member only: between events an
// idle watch holds none. The wire is the same as client-go's.
type watchGzip struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *watchGzip) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isWatch(req) || req.Header.Get("Accept-Encoding") != "" || req.Header.Get("Range") != "" {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := t.next.RoundTrip(req)
	if err != nil || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return resp, err
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	resp.Body = &gzipMembers{body: resp.Body}
	return resp, nil
}

// WrappedRoundTripper lets client-go's CloseIdleConnectionsFor reach the
// transport below (closeIdle, and the rotation closing the old
// credentials' connections, depend on it).
func (t *watchGzip) WrappedRoundTripper() http.RoundTripper { return t.next }

// isWatch reports whether req asks for a watch (?watch=true).
func isWatch(req *http.Request) bool {
	if req.Method != http.MethodGet || req.URL == nil {
		return false
	}
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

var (
	gzipReaders = sync.Pool{}
	// memberBufs hold the compressed bytes a member's reader reads ahead.
	memberBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
)

// gzipMembers decompresses a body of concatenated gzip members (RFC 1952)
// with a pooled reader and buffer per member.
type gzipMembers struct {
	body io.ReadCloser
	// mu serializes Read, and Close's release of the reader and buffer
	// (after it closed body, which ends a Read waiting for it).
	mu sync.Mutex
	// src buffers body between the members while it holds bytes of the
	// next one; zr reads the current member. Both are nil between
	// members, when src would hold nothing.
	src *bufio.Reader
	zr  *gzip.Reader
	err error
}

// Read implements io.Reader.
func (m *gzipMembers) Read(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.err == nil {
		if m.zr == nil {
			m.err = m.start()
			continue
		}
		n, err := m.zr.Read(p)
		if err == io.EOF { // the member's end, checksum verified
			m.release()
			err = nil
		}
		if err != nil {
			m.err = err
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, m.err
}

// start reads the next member's header. It waits for the member's first
// byte holding neither a buffer nor a reader; io.EOF then is the body's
// clean end.
func (m *gzipMembers) start() error {
	if m.src == nil {
		var first [1]byte
		if _, err := io.ReadFull(m.body, first[:]); err != nil {
			return err
		}
		m.src = memberBufs.Get().(*bufio.Reader)
		m.src.Reset(io.MultiReader(strings.NewReader(string(first[:])), m.body))
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(m.src)
	} else {
		err = zr.Reset(m.src)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // a byte was read: the header is cut
	}
	if err != nil {
		putGzipReader(zr)
		return err
	}
	zr.Multistream(false)
	m.zr = zr
	return nil
}

// release returns the finished member's reader to its pool, and the
// buffer too if it holds nothing of the next member.
func (m *gzipMembers) release() {
	putGzipReader(m.zr)
	m.zr = nil
	if m.src.Buffered() == 0 {
		m.putSrc()
	}
}

func (m *gzipMembers) putSrc() {
	m.src.Reset(nil)
	memberBufs.Put(m.src)
	m.src = nil
}

// Close implements io.Closer: it closes the body, then gives the reader
// and buffer back.
func (m *gzipMembers) Close() error {
	err := m.body.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zr != nil {
		putGzipReader(m.zr)
		m.zr = nil
	}
	if m.src != nil {
		m.putSrc()
	}
	m.err = http.ErrBodyReadAfterClose
	return err
}

// putGzipReader pools zr (if not nil), pointed at nothing: a pooled reader
// keeps no body alive.
func putGzipReader(zr *gzip.Reader) {
	if zr == nil {
		return
	}
	_ = zr.Reset(eofReader{}) // io.EOF: no header to read
	gzipReaders.Put(zr)
}

// eofReader is an empty flate.Reader.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
func (eofReader) ReadByte() (byte, error)  { return 0, io.EOF }
