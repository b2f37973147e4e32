// Package proptest runs pgregory.net/rapid property checks on virtual time:
// every test case runs in its own testing/synctest bubble, so time.Now,
// timers, time.Sleep and context deadlines are fake and advance only when
// every goroutine of the case is blocked. That is the injectable clock of
// the property tests of pool and breaker, without a clock parameter in their
// APIs: context.WithTimeout, which the pool uses, cannot take one.
package proptest
