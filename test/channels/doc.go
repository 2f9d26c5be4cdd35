// Package channelse2e holds the end-to-end tests of the two-way
// notification channels with the real binary: `overseer serve` on loopback
// sends a held action to a scripted service (notifytest) and reads the
// person's answer back over a connection it opened itself, and the
// agent's waiting call is released.
package channelse2e
