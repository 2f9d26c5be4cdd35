package egress

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
)

// sentFile is a file whose content a command sends: curl -d @FILE, -F
// name=@FILE, -T FILE, wget --post-file FILE, httpie's name@FILE, and a
// sender's standard input redirected from a file (nc host < FILE).
type sentFile struct {
	path string // as written (or resolved by the shell guard, for < FILE)
	how  string // how it is sent, for a person ("curl -d @")
	// tree: a directory's files are sent (scp -r, rsync -a, a pipe from
	// grep -r or tar); else a directory sends nothing that can be known,
	// and a person is asked.
	tree bool
	// nested: named in a file the command reads (a curl config), not on
	// its command line: a secret file is read and scanned, since the
	// paths guard never saw its name.
	nested bool
}

// curlDataOpts are curl's options whose value is data, or @FILE (the
// file's content as the data).
var curlDataOpts = map[string]bool{"-d": true, "--data": true, "--data-ascii": true, "--data-binary": true, "--json": true}

// sentFiles returns the files command c sends the content of.
func sentFiles(c action.Command) []sentFile {
	var out []sentFile
	add := func(p, how string) {
		if p != "" && p != "-" {
			out = append(out, sentFile{path: p, how: how})
		}
	}
	switch c.Name {
	case "curl", "curlie":
		eachOption(c.Args, func(opt, val string) {
			switch {
			case curlDataOpts[opt]:
				if f, ok := strings.CutPrefix(val, "@"); ok {
					add(f, c.Name+" "+opt+" @")
				}
			case opt == "--data-urlencode":
				// content, =content, name=content, @file or name@file
				if i := strings.IndexByte(val, '@'); i >= 0 && !strings.Contains(val[:i], "=") {
					add(val[i+1:], c.Name+" "+opt)
				}
			case opt == "-F" || opt == "--form":
				// name=@file[;type=…] uploads the file, name=<file sends
				// its content as the field's value.
				if _, v, ok := strings.Cut(val, "="); ok && (strings.HasPrefix(v, "@") || strings.HasPrefix(v, "<")) {
					f := v[1:]
					if j := strings.IndexByte(f, ';'); j >= 0 {
						f = f[:j]
					}
					add(strings.Trim(f, `"`), c.Name+" "+opt)
				}
			case opt == "-T" || opt == "--upload-file":
				add(val, c.Name+" "+opt)
			case (opt == "-H" || opt == "--header" || opt == "--proxy-header") && strings.HasPrefix(val, "@"):
				// -H @FILE: headers read from a file.
				add(val[1:], c.Name+" "+opt+" @")
			case (opt == "-b" || opt == "--cookie") && !strings.Contains(val, "="):
				// -b FILE: cookies read from a file and sent.
				add(val, c.Name+" "+opt)
			case opt == "-K" || opt == "--config":
				// A config file may hold the URL, data and headers
				// (url = …, data = "…", header = "…").
				add(val, c.Name+" "+opt)
			}
		}, curlValueOpts)
	case "wget":
		eachOption(c.Args, func(opt, val string) {
			if opt == "--post-file" || opt == "--body-file" {
				add(val, "wget "+opt)
			}
		}, map[string]bool{"--post-file": true, "--body-file": true})
	case "http", "https", "xh", "xhs", "httpie":
		// Request items after the URL: name@FILE (a file field),
		// name=@FILE (a field's value from a file), name:=@FILE (JSON
		// from a file).
		for _, x := range c.Args {
			if strings.HasPrefix(x, "-") || strings.Contains(x, "://") {
				continue
			}
			for _, sep := range []string{":=@", "=@", "@"} {
				i := strings.Index(x, sep)
				if i <= 0 {
					continue
				}
				if sep == "@" && strings.ContainsAny(x[:i], "=:") {
					break // name=a@b.com: a value holding an @
				}
				f := x[i+len(sep):]
				if j := strings.IndexByte(f, ';'); j >= 0 {
					f = f[:j]
				}
				add(f, c.Name+" "+x[:i]+sep)
				break
			}
		}
	case "gh":
		// gh gist create|edit FILE…, gh release upload TAG FILE…: the
		// files are uploaded to GitHub (a gist may be public).
		var w []string
		for i := 0; i < len(c.Args); i++ {
			x := c.Args[i]
			switch {
			case ghValueOpts[x]:
				i++ // the option's value
			case !strings.HasPrefix(x, "-"):
				w = append(w, x)
			}
		}
		switch {
		case len(w) >= 3 && w[0] == "gist" && (w[1] == "create" || w[1] == "edit"):
			for _, f := range w[2:] {
				add(f, "gh gist "+w[1])
			}
		case len(w) >= 4 && w[0] == "release" && w[1] == "upload":
			for _, f := range w[3:] {
				f, _, _ = strings.Cut(f, "#")
				add(f, "gh release upload")
			}
		}
	case "scp", "rsync":
		// The local sources: every operand but the last (the destination)
		// that is not host:path (a copy from a remote host sends nothing
		// of here).
		ops := copyOperands(c.Args, copyValueOpts[c.Name])
		if len(ops) < 2 {
			break
		}
		for _, x := range ops[:len(ops)-1] {
			if !remoteOperand(x) {
				out = append(out, sentFile{path: x, how: c.Name, tree: true})
			}
		}
	}
	if c.Stdin != "" {
		add(c.Stdin, c.Name+" < (standard input)")
	}
	for _, p := range c.PipedFiles {
		out = append(out, sentFile{path: p, how: c.Name + " (piped into it)", tree: true})
	}
	return out
}

// ghValueOpts are gh's options (of gist and release) that take a value.
var ghValueOpts = map[string]bool{"-d": true, "--desc": true, "-f": true, "--filename": true, "-R": true, "--repo": true}

// copyValueOpts are the options of scp and rsync that take the next
// argument as their value (as effects.yaml describes them).
var copyValueOpts = map[string]map[string]bool{
	"scp": {"-i": true, "-F": true, "-P": true, "-o": true, "-l": true, "-c": true, "-S": true, "-J": true, "-D": true, "-X": true},
	"rsync": {"-e": true, "--rsh": true, "--exclude": true, "--include": true, "--filter": true, "-f": true,
		"--files-from": true, "--exclude-from": true, "--include-from": true, "--password-file": true, "-T": true,
		"--temp-dir": true, "--partial-dir": true, "--backup-dir": true, "--chmod": true, "--chown": true,
		"--rsync-path": true, "--port": true, "--suffix": true, "--compare-dest": true, "--copy-dest": true,
		"--link-dest": true, "--log-file": true, "--bwlimit": true, "--timeout": true, "-M": true, "--remote-option": true},
}

// copyOperands returns the operands of a copy command: its arguments that
// are not options or options' values.
func copyOperands(args []string, takes map[string]bool) []string {
	var ops []string
	for i := 0; i < len(args); i++ {
		x := args[i]
		switch {
		case x == "--":
			return append(ops, args[i+1:]...)
		case strings.HasPrefix(x, "-") && x != "-":
			if takes[x] && !strings.Contains(x, "=") {
				i++
			}
		default:
			ops = append(ops, x)
		}
	}
	return ops
}

// remoteOperand reports an scp/rsync operand on another host:
// [user@]host:path, host::module or a URL.
func remoteOperand(x string) bool {
	if strings.Contains(x, "://") {
		return true
	}
	i := strings.IndexByte(x, ':')
	return i > 0 && !strings.Contains(x[:i], "/")
}

// curlValueOpts are curl's options that take a value (as the next
// argument, or attached).
var curlValueOpts = map[string]bool{"-d": true, "--data": true, "--data-ascii": true, "--data-binary": true,
	"--json": true, "--data-urlencode": true, "-F": true, "--form": true, "-T": true, "--upload-file": true,
	"--data-raw": true, "--form-string": true, "-H": true, "--header": true, "-u": true, "--user": true,
	"-X": true, "--request": true, "-o": true, "--output": true, "-A": true, "--user-agent": true, "-e": true,
	"--referer": true, "-b": true, "--cookie": true, "-c": true, "--cookie-jar": true, "-K": true, "--config": true,
	"-x": true, "--proxy": true, "-w": true, "--write-out": true, "-m": true, "--max-time": true,
	"--connect-timeout": true, "-E": true, "--cert": true, "--key": true, "--cacert": true, "-r": true,
	"--range": true, "--retry": true, "--resolve": true, "-D": true, "--dump-header": true}

// eachOption calls fn for every option of args that takes a value: as the
// next argument ("-d @f"), attached to a long option ("--data=@f") or to
// a short one ("-d@f").
func eachOption(args []string, fn func(opt, val string), takes map[string]bool) {
	for i := 0; i < len(args); i++ {
		x := args[i]
		if !strings.HasPrefix(x, "-") || x == "-" {
			continue
		}
		if x == "--" {
			return
		}
		if strings.HasPrefix(x, "--") {
			if name, val, ok := strings.Cut(x, "="); ok {
				if takes[name] {
					fn(name, val)
				}
				continue
			}
			if takes[x] && i+1 < len(args) {
				fn(x, args[i+1])
				i++
			}
			continue
		}
		if len(x) > 2 && takes[x[:2]] {
			fn(x[:2], x[2:])
			continue
		}
		if takes[x] && i+1 < len(args) {
			fn(x, args[i+1])
			i++
		}
	}
}

// maxSentFile is how much of a sent file is read and scanned (the
// analyser's own limit; the rest is reported as not scanned).
const maxSentFile = secrets.DefaultMaxBytes

// errNotRegular: a sent path that is not a regular file.
var errNotRegular = guard.ErrNotRegular

// fileParts reads the files a request sends (not the secret files: their
// reading is judged as such) and returns them as parts, and a finding for
// each file that could not be read: its content is not known, so a person
// is asked.
func (g *Guard) fileParts(files []sentFile, cwd string) (parts []secrets.Part, unread, secretFiles []string) {
	for _, f := range files {
		p := f.path
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			if g.env.UserHome == "" {
				unread = append(unread, fmt.Sprintf("%s %s (the home directory is not known)", f.how, f.path))
				continue
			}
			p = filepath.Join(g.env.UserHome, strings.TrimPrefix(p, "~"))
		case strings.HasPrefix(p, "~"): // ~user/…
			unread = append(unread, fmt.Sprintf("%s %s (another user's home)", f.how, f.path))
			continue
		case !filepath.IsAbs(p):
			if cwd == "" || !filepath.IsAbs(cwd) {
				unread = append(unread, fmt.Sprintf("%s %s (the working directory is not known)", f.how, f.path))
				continue
			}
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if g.inHome(p) {
			// Overseer's own home: never read here (the paths guard blocks
			// any effect on it), so a verdict says nothing of its files.
			continue
		}
		if g.env.SecretPath != nil && !f.nested {
			if _, ok := g.env.SecretPath(p); ok {
				continue // a secret file: its reading is judged as such
			}
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() && f.tree {
			ps, why := g.dirParts(p, f, &secretFiles)
			parts = append(parts, ps...)
			if why != "" {
				unread = append(unread, why)
			}
			continue
		}
		b, err := readCapped(p, maxSentFile+1)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			unread = append(unread, fmt.Sprintf("%s %s (%v)", f.how, f.path, err))
			continue
		}
		parts = append(parts, secrets.Part{Name: "file " + f.path + " (" + f.how + ")", Text: string(b)})
	}
	return parts, unread, secretFiles
}

// maxDirFiles is how many files of a sent directory are read to scan
// them; a larger tree is not scanned, and a person is asked.
const maxDirFiles = 256

// dirParts reads the regular files under dir (rsync -a dir host:, grep -r
// . dir | curl -d @- …) for scanning, at most maxDirFiles files and
// maxSentFile bytes, skipping secret files (their reading is judged as
// such) and .git. It returns why the tree could not be scanned whole.
func (g *Guard) dirParts(dir string, f sentFile, secretFiles *[]string) ([]secrets.Part, string) {
	var parts []secrets.Part
	files, total := 0, 0
	errStop := errors.New("stop")
	why := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			why = fmt.Sprintf("%s %s (%v)", f.how, f.path, err)
			return errStop
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != dir {
				// Not walked; its config is read: a remote's URL may hold
				// a token (https://user:TOKEN@host/…).
				if b, err := readCapped(filepath.Join(p, "config"), 64<<10); err == nil {
					parts = append(parts, secrets.Part{Name: "file " + filepath.Join(p, "config") + " (" + f.how + ")", Text: string(b)})
				}
				return filepath.SkipDir
			}
			return nil
		}
		if g.env.SecretPath != nil {
			if pat, ok := g.env.SecretPath(p); ok {
				// The paths guard saw the directory, not this file: that a
				// secret file goes out is said here, whatever it holds.
				*secretFiles = append(*secretFiles, fmt.Sprintf("%s (secret: %s, in %s sent by %s)", p, pat, f.path, f.how))
				return nil
			}
		}
		if files++; files > maxDirFiles {
			why = fmt.Sprintf("%s %s (a directory of more than %d files)", f.how, f.path, maxDirFiles)
			return errStop
		}
		b, err := readCapped(p, int64(maxSentFile-total+1))
		if errors.Is(err, errNotRegular) {
			return nil // a device, a socket, a link to a directory
		}
		if err != nil {
			why = fmt.Sprintf("%s %s (%v)", f.how, p, err)
			return errStop
		}
		total += len(b)
		parts = append(parts, secrets.Part{Name: "file " + p + " (" + f.how + ")", Text: string(b)})
		if total > maxSentFile {
			why = fmt.Sprintf("%s %s (more than %d bytes)", f.how, f.path, maxSentFile)
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) && why == "" {
		why = fmt.Sprintf("%s %s (%v)", f.how, f.path, err)
	}
	return parts, why
}

func readCapped(p string, n int64) ([]byte, error) {
	fh, err := guard.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, n))
}
