package mcpgw

// HiddenByPolicy exposes hiddenByPolicy to the tests.
var HiddenByPolicy = hiddenByPolicy
