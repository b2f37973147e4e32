package envtestutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event (kube-apiserver's
// --audit-log-format=json, one event per line) that the project's
// rotation test and benchmark read.
type AuditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// ReadAudit decodes the complete lines of an audit log read from r and
// returns them with the number of bytes they took: a partial last line
// (the apiserver is still writing it) is left for the next read.
func ReadAudit(r io.Reader) ([]AuditEvent, int64, error) {
	var (
		out  []AuditEvent
		read int64
	)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, read, nil
		}
		if err != nil {
			return out, read, err
		}
		var ev AuditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return out, read, fmt.Errorf("audit log at byte %d: %w", read, err)
		}
		read += int64(len(line))
		out = append(out, ev)
	}
}
