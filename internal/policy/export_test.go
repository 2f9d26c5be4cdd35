package policy

// FirstExhaustive is firstExhaustive for the external tests.
var FirstExhaustive = firstExhaustive
