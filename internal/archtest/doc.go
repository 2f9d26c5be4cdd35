// Package archtest holds tests that check the project's architecture: the
// kernel never imports plugins or front ends, and every package documents
// itself.
package archtest
