// Package webe2e holds the end-to-end tests of the people's side: a person
// answers a waiting action from the web console in headless Chromium, from
// the terminal UI in tmux, from the CLI and from a notification link, and
// the agent's waiting call is released each time.
//
// The browser is Debian's chromium driven by playwright-core from npm;
// scripts/install-web-test-tools.sh installs both (and tmux). When a tool
// is missing the tests fail under CI=true and skip, loudly, elsewhere.
package webe2e
