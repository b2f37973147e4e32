package kube

import (
	"errors"
	"fmt"
)

// ErrInvalidOptions is matched (errors.Is) by every configuration error of
// kube's constructors (NewDialer, NewProber). The error names the field,
// e.g. "kube: invalid options: DialerOptions.QPS=-1 must not be negative".
var ErrInvalidOptions = errors.New("kube: invalid options")

// invalidOptions wraps err, which names the offending field, so that it
// matches ErrInvalidOptions. A nil err stays nil.
func invalidOptions(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
}
