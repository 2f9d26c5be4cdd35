// Package archtest holds tests that check the project's architecture: the
// kernel never imports plugins or front ends, every package documents
// itself, and the release binary links none of the packages whose size
// was traded for lighter ones.
package archtest
