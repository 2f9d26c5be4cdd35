package mcpgw

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/mcpguard"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Reads the gateway makes for a client besides tool calls: resources/read
// and prompts/get. Each is judged and recorded before the server is asked,
// as a tool call is: a server that reads what the arguments name (a
// prompt that quotes the file its argument names, a resource template
// that fetches the URL it is given) would otherwise be a way around the
// file and network guards, unrecorded.
//
//   - file:// resources are reads of the file (kind file_read);
//   - http(s) resources are fetches (kind net_fetch): the network guards
//     refuse private and metadata addresses and Overseer's own API, the
//     egress guard reads secrets in the URL;
//   - any other resource, and every prompt, is a read of the server's own
//     data (kind mcp, classified read_only: quiet by default), whose
//     arguments are judged as a tool call's: a path among them (absolute,
//     ~/…, or a file that exists in the working directory) is a read of
//     that file, a URL or a secret is judged by the network and egress
//     guards.

// getPromptTool names a prompts/get in the actions it is judged as.
const getPromptTool = "get_prompt"

// maxPromptArgs bounds the arguments of a prompt that are judged; a prompt
// given more is refused (every value must be judged, or none is sent).
const maxPromptArgs = 256

// resourceAction is the action a resources/read is judged as.
func (g *Gateway) resourceAction(req *mcp.ReadResourceRequest, u *upstream) (*action.Action, error) {
	uri := req.Params.URI
	a := &action.Action{Agent: g.clientName(req.ClientInfo()), Session: g.sessionOf(req.Session),
		Tool: u.name + Separator + readResourceTool, Cwd: g.readCwd(u)}
	if p, isFile := fileURIPath(uri); isFile {
		if p == "" {
			return nil, fmt.Errorf("Overseer: the resource %s names no file that can be judged; it was not read", uri)
		}
		a.Kind, a.Args = action.KindFileRead, map[string]any{"uri": uri, "file_path": p}
		return a, nil
	}
	if pu, err := url.Parse(uri); err == nil && (strings.EqualFold(pu.Scheme, "http") || strings.EqualFold(pu.Scheme, "https")) {
		a.Kind, a.Args = action.KindNetFetch, map[string]any{"url": uri}
		return a, nil
	}
	a.Kind, a.Args = action.KindMCP, map[string]any{"uri": uri}
	// A scheme of the server's own whose path names a file that is there
	// (notes:///home/u/.ssh/id_rsa): the server may read that file; so may
	// one whose template takes the file in a query or a fragment
	// (notes://read?path=/home/u/.ssh/id_rsa), or as host and path
	// (notes://home/u/.ssh/id_rsa). A URI that does not parse is judged
	// by its text.
	g.argPaths(a, uriPaths(uri))
	mcpguard.MarkServerRead(a, "resources/read")
	return a, nil
}

// uriPaths are the parts of a resource URI of a server's own scheme that
// may name a file the server reads: its path (or opaque part), its host
// and path together, each query value (and key) and its fragment, all
// decoded, and the parts of the raw text after the scheme.
func uriPaths(uri string) []string {
	var out []string
	pu, err := url.Parse(uri)
	if err != nil {
		if _, rest, ok := strings.Cut(uri, ":"); ok {
			out = append(out, strings.TrimPrefix(rest, "//"), rest)
		}
		return out
	}
	out = append(out, pu.Path, pu.Opaque, pu.Fragment)
	if pu.Host != "" && pu.Path != "" {
		out = append(out, "/"+pu.Host+pu.Path)
	}
	if pu.Host == "~" || strings.HasPrefix(pu.Path, "/~/") {
		out = append(out, "~"+strings.TrimPrefix(strings.TrimPrefix(pu.Path, "/~"), "~"))
	}
	for _, part := range strings.Split(pu.RawQuery, "&") {
		for _, kv := range strings.SplitN(part, "=", 2) {
			if v, err := url.QueryUnescape(kv); err == nil {
				out = append(out, v)
			} else {
				out = append(out, kv)
			}
		}
	}
	return out
}

// promptAction is the action a prompts/get is judged as.
func (g *Gateway) promptAction(req *mcp.GetPromptRequest, e *promptEntry) (*action.Action, error) {
	if n := len(req.Params.Arguments); n > maxPromptArgs {
		return nil, fmt.Errorf("Overseer: the prompt %s was given %d arguments, more than the %d that are judged; it was not got", e.orig, n, maxPromptArgs)
	}
	args := map[string]any{}
	vals := make([]string, 0, len(req.Params.Arguments))
	for k, v := range req.Params.Arguments {
		args[k] = v
		vals = append(vals, v)
	}
	sort.Strings(vals)
	a := &action.Action{Agent: g.clientName(req.ClientInfo()), Session: g.sessionOf(req.Session),
		Tool: e.up.name + Separator + getPromptTool, Kind: action.KindMCP, Cwd: g.readCwd(e.up),
		Args: map[string]any{"prompt": e.orig, "arguments": args}}
	g.argPaths(a, vals)
	mcpguard.MarkServerRead(a, "prompts/get")
	return a, nil
}

// readCwd is the directory a server reads relative paths in.
func (g *Gateway) readCwd(u *upstream) string {
	if u.cfg.Cwd != "" {
		return u.cfg.Cwd
	}
	return g.cwd
}

// argPaths records the argument values of a that name a file the server
// may read as read facts: absolute and ~/ paths, and relative ones that
// exist in the working directory (.env). Other values are text.
func (g *Gateway) argPaths(a *action.Action, vals []string) {
	home, _ := os.UserHomeDir()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, "\n\x00") {
			continue // text: no file is named so
		}
		if p, ok := fileURIPath(v); ok && p != "" {
			v = p
		}
		var abs string
		switch {
		case filepath.IsAbs(v):
			abs = filepath.Clean(v)
		case v == "~" || strings.HasPrefix(v, "~/"):
			if home == "" {
				continue
			}
			abs = filepath.Join(home, strings.TrimPrefix(v, "~"))
		case a.Cwd != "" && !strings.Contains(v, "://"):
			p := filepath.Join(a.Cwd, v)
			if _, err := os.Lstat(p); err != nil {
				continue // text, not a file of the working directory
			}
			abs = p
		default:
			continue
		}
		f := action.PathFact{Path: abs, Intent: action.PathRead, InCwd: a.Cwd != "" && action.Within(filepath.Clean(a.Cwd), abs)}
		dup := false
		for _, x := range a.Facts.Paths {
			dup = dup || x == f
		}
		if !dup {
			a.Facts.Paths = append(a.Facts.Paths, f)
		}
	}
}

// recordRead records what a judged read returned as its action's result,
// scanned like a tool's.
func (g *Gateway) recordRead(actionID string, a *action.Action, out string, isErr bool) {
	scan := g.k.ScanResult(out)
	g.results.record(kernel.Result{ActionID: actionID, Agent: a.Agent, Session: a.Session, Tool: a.Tool,
		Output: out, IsError: isErr, Scan: &scan, Lazy: true})
}
