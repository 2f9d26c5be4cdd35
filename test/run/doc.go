// Package run holds the end-to-end tests of the supervised mode: the real
// overseer binary runs tasks against scripted model servers that speak the
// OpenAI and Anthropic wire formats byte for byte, and a person answers
// through the CLI from another process.
package run
