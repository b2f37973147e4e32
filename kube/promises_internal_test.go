package kube

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// redactURL leaves no userinfo nor query in an error's text, whether the
// *url.Error is the error itself or wrapped, and keeps what errors.Is and
// errors.As find.
func TestPromiseRedactURL(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "https://canary-user:***@127.0.0.1:6443/p/readyz?canary-query=1#canary-frag",
		Err: context.DeadlineExceeded}
	for _, err := range []error{ue, fmt.Errorf("kube: dialing: %w", ue)} {
		got := redactURL(err)
		if s := got.Error(); strings.Contains(s, "canary") || strings.Contains(s, "***") ||
			!strings.Contains(s, "https://127.0.0.1:6443/p/readyz") {
			t.Errorf("redactURL(%q) = %q", err, s)
		}
		var as *url.Error
		if !errors.Is(got, context.DeadlineExceeded) || !errors.As(got, &as) || !as.Timeout() {
			t.Errorf("redactURL(%q) lost its cause: %#v", err, got)
		}
	}
	plain := errors.New("no URL here")
	if got := redactURL(plain); got != plain {
		t.Errorf("redactURL of an error without a *url.Error: %v", got)
	}
}
