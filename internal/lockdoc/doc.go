// Package lockdoc checks a package's written lock order against its
// source: the tests of pool and kube call Check on their own directory.
package lockdoc
