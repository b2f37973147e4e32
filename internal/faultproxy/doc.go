// Package faultproxy is a TCP proxy on 127.0.0.1 for tests and demos. It
// sits in front of a real server and switches at run time between passing
// traffic, holding connections (accepting and never answering, as an
// unreachable cluster behind a black-holing network does), refusing or
// resetting them, stalling them (a partition that heals), delaying them,
// delaying their first byte, and trickling the server's bytes.
//
// It listens on, and may forward only to, loopback addresses: New refuses
// any other target.
package faultproxy
