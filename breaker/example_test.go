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
