package pgtest

// Sweep is sweep, for the tests.
var Sweep = sweep
