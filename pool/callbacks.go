package pool

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/breaker"
)

// Every user callback runs through one of these wrappers, never with a pool
// lock held: a panic is recovered, counted (clusterpool.callback.panics)
// and turned into a documented outcome.

// errNilClient is the cause of ErrDialFailed for a (nil, nil) dial.
var errNilClient = errors.New("dialer returned a nil client and no error")

// safeDial calls the dialer: a panic is ErrDialPanic, (nil, nil)
// errNilClient.
func (p *Pool[K, C]) safeDial(ctx context.Context, span trace.Span, key K) (client C, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.rec.CallbackPanic(span, "dial")
			var zero C
			client, err = zero, fmt.Errorf("%w: %v", ErrDialPanic, r)
		}
	}()
	client, err = p.dial(ctx, key)
	if err == nil && isNil(client) {
		err = errNilClient
	}
	return client, err
}

// closeClient passes c to OnClose, recovering a panic.
func (p *Pool[K, C]) closeClient(key K, c C) {
	defer func() {
		if r := recover(); r != nil {
			p.rec.CallbackPanic(nil, "OnClose")
		}
	}()
	p.opts.OnClose(key, c)
}

// classify turns a dial's or use's error into a breaker outcome with the
// cluster's IsFailure (a panic: Failure).
func (p *Pool[K, C]) classify(s *keySettings, err error) (o breaker.Outcome) {
	if err == nil {
		return breaker.Success
	}
	defer func() {
		if r := recover(); r != nil {
			p.rec.CallbackPanic(nil, "IsFailure")
			o = breaker.Failure
		}
	}()
	if s.isFailure(err) {
		return breaker.Failure
	}
	return breaker.Ignored
}

// format renders key with FormatKey; a panic gives "<unprintable>".
func (p *Pool[K, C]) format(key K) (name string) {
	defer func() {
		if r := recover(); r != nil {
			p.rec.CallbackPanic(nil, "FormatKey")
			name = "<unprintable>"
		}
	}()
	return p.opts.FormatKey(key)
}

// settingsFor returns key's settings: the pool's, with ForKey's overrides.
func (p *Pool[K, C]) settingsFor(key K, name string) (s *keySettings, err error) {
	if p.opts.ForKey == nil {
		return p.base, nil
	}
	defer func() {
		if r := recover(); r != nil {
			p.rec.CallbackPanic(nil, "ForKey")
			err = fmt.Errorf("%w: ForKey panicked (cluster %s)", ErrInvalidOptions, name)
		}
	}()
	ov := p.opts.ForKey(key)
	if ov == (Overrides{}) {
		return p.base, nil // shared
	}
	s, err = p.opts.settingsFor(ov)
	if err != nil {
		return s, fmt.Errorf("%w (cluster %s)", err, name)
	}
	return s, nil
}

// isNil reports whether c is a nil pointer, interface, map, slice, func or
// channel.
func isNil[C any](c C) bool {
	v := reflect.ValueOf(any(c))
	if !v.IsValid() {
		return true // a nil interface
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// isZero reports whether c is its type's zero value: nothing to close.
func isZero[C any](c C) bool {
	v := reflect.ValueOf(any(c))
	return !v.IsValid() || v.IsZero()
}
