// Code generated from selfapi.yaml by `go generate` (TestEmbeddedJSON); DO NOT EDIT.

package shell

// selfListsValue is selfapi.yaml, decoded.
func selfListsValue() selfLists {
	return selfLists{OverseerAllowed: map[string]interface{}{
		"agent":      []interface{}{"", "list", "show"},
		"approvals":  "any",
		"audit":      []interface{}{"", "verify", "export", "tail"},
		"budget":     []interface{}{"", "status"},
		"completion": "any",
		"eval":       "any",
		"help":       "any",
		"limits":     []interface{}{"", "list", "usage"},
		"mcp":        []interface{}{"pins", "check"},
		"paused":     "any",
		"policy":     []interface{}{"", "test", "explain", "history", "show", "check", "lint"},
		"tasks":      []interface{}{"", "show"},
		"tool":       []interface{}{"", "list"},
		"version":    "any",
		"watch":      []interface{}{"", "panes"},
	}, HTTPClients: []string{"curl", "curlie", "wget", "wget2", "http", "https", "httpie", "xh", "xhs", "lwp-request", "get", "post", "head", "aria2c", "hurl", "grpcurl", "websocat", "wscat", "lynx", "links", "elinks", "w3m", "ab", "hey", "oha", "wrk", "siege", "fetch"}, URLClients: []string{"git", "pip", "pip3", "pipx", "uv", "uvx", "npm", "npx", "pnpm", "yarn", "bun", "go", "cargo", "gem", "bundle", "composer", "svn", "hg", "brew", "docker", "podman", "helm", "kubectl", "open", "xdg-open", "sensible-browser", "gh", "apt", "apt-get", "yum", "dnf", "conda", "mamba", "poetry", "deno"}, SocketClients: []string{"nc", "ncat", "netcat", "socat", "telnet", "openssl", "gnutls-cli", "busybox", "s_client", "pwncat", "cryptcat"}}
}
