package rotation

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// auditEvent is an audit log event.
type auditEvent = envtestutil.AuditEvent

// request is one completed request of a peer as the audit log shows it.
type request struct {
	At      time.Time
	Cluster string // "" for a request that failed authentication
	Gen     int
	Kind    requestKind
	Code    int
	Path    string // the request URI without its query
}

// requestKind classifies a request for the rotation's figures.
type requestKind int

const (
	// otherRequest: anything but the kinds below.
	otherRequest requestKind = iota
	// relist: a LIST, or a watch with sendInitialEvents=true (client-go's
	// WatchListClient lists through a watch): an informer (re)building its
	// cache.
	relist
	// rewatch: a watch from a resourceVersion, no list.
	rewatch
)

// classify returns the request of ev if it is a completed request of peer
// (by its identities' names), or one that failed authentication (401: the
// apiserver logs those at ResponseStarted, without a user), and false for
// anything else.
func classify(ev auditEvent, peer string) (request, bool) {
	r := request{At: ev.Received, Path: uriPath(ev.RequestURI)}
	if ev.ResponseStatus != nil {
		r.Code = ev.ResponseStatus.Code
	}
	id, ok := fleet.ParseUsername(ev.User.Username)
	switch {
	case ok && id.Peer == peer && ev.Stage == "ResponseComplete":
		r.Cluster, r.Gen = id.Cluster, id.Gen
	case ev.User.Username == "" && r.Code == 401 && ev.Stage == "ResponseStarted":
	default:
		return request{}, false
	}
	switch {
	case ev.Verb == "list", ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true"):
		r.Kind = relist
	case ev.Verb == "watch":
		r.Kind = rewatch
	}
	return r, true
}

// auditLog is one apiserver's audit log file; reads start where the last
// read (or mark) ended.
type auditLog struct {
	file   string
	offset int64
}

// mark skips everything written so far.
func (l *auditLog) mark() error {
	st, err := os.Stat(l.file)
	if os.IsNotExist(err) {
		l.offset = 0
		return nil
	}
	if err != nil {
		return err
	}
	l.offset = st.Size()
	return nil
}

// read returns peer's requests written since the mark, and moves it.
func (l *auditLog) read(peer string) ([]request, error) {
	f, err := os.Open(l.file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil, err
	}
	evs, n, err := envtestutil.ReadAudit(f)
	l.offset += n
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.file, err)
	}
	var out []request
	for _, ev := range evs {
		if req, ok := classify(ev, peer); ok {
			out = append(out, req)
		}
	}
	return out, nil
}
