package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

func ExampleBreaker() {
	b, err := breaker.New(breaker.Settings{ConsecutiveFailures: 2, OpenTimeout: time.Second, DisableJitter: true})
	if err != nil {
		panic(err)
	}
	for range 2 {
		ticket, _ := b.Allow()
		if tr, changed := ticket.Done(errors.New("connection refused")); changed {
			fmt.Printf("%v -> %v for %v\n", tr.From, tr.To, tr.OpenFor)
		}
	}
	_, err = b.Allow()
	fmt.Println(err)
	// Output:
	// closed -> open for 1s
	// breaker: circuit open
}

// A Machine is driven with explicit instants: no lock, no clock.
func ExampleMachine() {
	m, err := breaker.NewMachine(breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true})
	if err != nil {
		panic(err)
	}
	t0 := time.Unix(0, 0)
	ticket, _ := m.Allow(t0)
	tr, _ := m.Record(ticket, breaker.Failure, t0)
	fmt.Printf("%v -> %v for %v\n", tr.From, tr.To, tr.OpenFor)
	_, err = m.Allow(t0.Add(500 * time.Millisecond))
	fmt.Println(err)
	probe, _ := m.Allow(t0.Add(time.Second)) // the open period is over
	tr, _ = m.Record(probe, breaker.Success, t0.Add(time.Second))
	fmt.Printf("%v -> %v\n", tr.From, tr.To)
	// Output:
	// closed -> open for 1s
	// breaker: circuit open
	// half-open -> closed
}
