package grayproxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errInjected is the cause in the Status of the 500 answers Errors gives.
var errInjected = errors.New("grayproxy: injected internal error")

// writeStatus answers with st as a Kubernetes Status (JSON, which
// client-go decodes whatever it asked for), and a Retry-After header if
// retryAfter is positive.
func writeStatus(w http.ResponseWriter, st metav1.Status, retryAfter int) {
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st) // a Status always encodes
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(int(st.Code))
	w.Write(body)
}

// writeError answers with the Status of a 500 (coin false) or 503 (coin
// true) of Errors mode, or code if it is not zero. It carries no
// Retry-After: client-go retries 5xx answers that do, and would hide the
// fault.
func writeError(w http.ResponseWriter, code int, coin bool) {
	if code == 0 {
		code = http.StatusInternalServerError
		if coin {
			code = http.StatusServiceUnavailable
		}
	}
	if code == http.StatusServiceUnavailable {
		writeStatus(w, apierrors.NewServiceUnavailable("grayproxy: injected unavailability").ErrStatus, 0)
		return
	}
	writeStatus(w, apierrors.NewInternalError(errInjected).ErrStatus, 0)
}

// writeThrottled answers 429 with Retry-After seconds, as API Priority and
// Fairness does.
func writeThrottled(w http.ResponseWriter, seconds int) {
	writeStatus(w, apierrors.NewTooManyRequests("grayproxy: too many requests, please try again later", seconds).ErrStatus, seconds)
}

// writeRefused answers a request the proxy cannot forward: 401 for a
// client certificate it cannot verify, 400 otherwise.
func writeRefused(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrUnauthenticated) {
		writeStatus(w, apierrors.NewUnauthorized("Unauthorized").ErrStatus, 0)
		return
	}
	writeStatus(w, apierrors.NewBadRequest(err.Error()).ErrStatus, 0)
}

// badGateway is the reverse proxies' ErrorHandler: the apiserver could not
// be reached, or its answer not relayed (the caller left, or the proxy
// closed).
func badGateway(w http.ResponseWriter, _ *http.Request, err error) {
	st := apierrors.NewInternalError(err).ErrStatus
	st.Code, st.Reason = http.StatusBadGateway, metav1.StatusReasonUnknown
	writeStatus(w, st, 0)
}
