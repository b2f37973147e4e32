package watchgzip

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// RoundTrip sends req through next. A watch that sets neither
// Accept-Encoding nor Range is sent asking for gzip, and a compressed answer
// comes back with its body decompressed member by member and without
// Content-Encoding or Content-Length. req itself is not changed.
func RoundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	if !IsWatch(req) || req.Header.Get("Accept-Encoding") != "" || req.Header.Get("Range") != "" {
		return next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := next.RoundTrip(req)
	if err != nil || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return resp, err
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	resp.Body = &members{body: resp.Body}
	return resp, nil
}

// IsWatch reports whether req asks for a watch (?watch=true).
func IsWatch(req *http.Request) bool {
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

// members decompresses a body of concatenated gzip members (RFC 1952)
// with a pooled reader and buffer per member.
//
// No lock is held across a read of the body: Read marks itself reading
// under mu, reads without it, and gives the reader and buffer back if
// Close came meanwhile; Close closes the body (which ends a Read waiting
// for it) and gives them back only when no Read holds them. So Close never
// waits for a Read.
type members struct {
	body io.ReadCloser
	// mu guards reading and closed; src, zr and err belong to the Read
	// that set reading, or, when none does, to whoever holds mu.
	mu      sync.Mutex
	reading bool
	closed  bool
	// src buffers body between the members while it holds bytes of the
	// next one; zr reads the current member. Both are nil between
	// members, when src would hold nothing.
	src *bufio.Reader
	zr  *gzip.Reader
	err error
}

// errConcurrentRead: io.Reader allows one Read at a time.
var errConcurrentRead = errors.New("kube: concurrent Read of a watch body")

// Read implements io.Reader. A zero-length Read returns (0, nil) at once.
func (m *members) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	case m.reading:
		m.mu.Unlock()
		return 0, errConcurrentRead
	}
	m.reading = true
	m.mu.Unlock()
	n, err := m.read(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reading = false
	if m.closed {
		m.free()
	}
	return n, err
}

// read fills p (not empty) from the current member, starting the next one
// as needed; only the Read that set reading calls it.
func (m *members) read(p []byte) (int, error) {
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
func (m *members) start() error {
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
func (m *members) release() {
	putGzipReader(m.zr)
	m.zr = nil
	if m.src.Buffered() == 0 {
		m.putSrc()
	}
}

func (m *members) putSrc() {
	m.src.Reset(nil)
	memberBufs.Put(m.src)
	m.src = nil
}

// Close implements io.Closer: it closes the body, then gives the reader
// and buffer back, or leaves that to the Read in progress.
func (m *members) Close() error {
	err := m.body.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if !m.reading {
		m.free()
	}
	return err
}

// free gives the reader and buffer back; mu is held and no Read holds
// them.
func (m *members) free() {
	if m.zr != nil {
		putGzipReader(m.zr)
		m.zr = nil
	}
	if m.src != nil {
		m.putSrc()
	}
	m.err = http.ErrBodyReadAfterClose
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
