package shell

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/archive"
	"github.com/overseer-dev/overseer/internal/guard/gitread"
	"github.com/overseer-dev/overseer/internal/guard/paths"
)

// What an archive on disk writes when it is unpacked (tar -x, unzip) is
// read before it runs (package archive): its member list, with the
// content of the members that run code later. A member that lands on a
// control file — a hook configuration, .git/hooks, a shell start-up file —
// is a write of it (the paths guard blocks it); a skill, a task file or a
// package's scripts are judged by the text they will hold (planted.go); a
// member or a link that leads out of the directory it is unpacked into, and
// a link to a file that decides what runs later, reach a person. An archive
// that cannot be listed whole within the bounds (an unread compression, a
// corrupt file, too many members, too slow) reaches a person. An archive
// that is not there when judged (downloaded by the same command) is what
// unseen.go judges: running what it wrote reaches a person.

// archiveOpts are the options of an unpacking that change where members go.
type archiveOpts struct {
	zip       bool // unzip
	strip     int  // tar --strip-components
	absolute  bool // tar -P: absolute names and .. kept
	junk      bool // unzip -j: directories dropped
	transform bool // tar --transform: names rewritten, not known
	zeros     bool // tar -i: members after the end-of-archive blocks are unpacked too
}

// maxArchiveFacts bounds the members recorded as writes.
const maxArchiveFacts = 128

// maxReadSpent bounds the time one command's archives and repositories are
// read for (each reading has its own bound too): a command of many slow
// archives (a thousand gzip bombs, each read to its bound) reaches a person
// when it is spent instead of holding the judgement for minutes.
const maxReadSpent = 2 * time.Second

// readBudget reports whether time is left to read for this command; when
// none is, what unpacking reads would show is not known, and a person is
// asked.
func (a *analyzer) readBudget(what string) bool {
	if a.readSpent < maxReadSpent {
		return true
	}
	a.add(guard.Finding{Check: "shell.archive-unread", Level: action.Confirm, Hard: true,
		Message: fmt.Sprintf("%s is not read: this command's archives and repositories took the time they may be read for (%s)", what, maxReadSpent)})
	return false
}

// archiveWrites judges the archive file unpacked into dir by the segment s.
func (a *analyzer) archiveWrites(s *segCtx, file, dir arg, o archiveOpts) {
	if a.limited || file.dyn || dir.dyn || file.val == "-" || file.val == "" {
		return
	}
	p, ok := a.fileAbs(file.val)
	if !ok || !path.IsAbs(p) {
		return
	}
	if _, w := a.written[p]; w || a.unseenBefore(p, s.idx) != "" || a.changedBefore(p, s.idx) {
		return // made by this command: not what is on disk now (unseen.go)
	}
	fsys := a.fileSystem()
	if _, err := fs.Stat(fsys, fsName(p)); errors.Is(err, fs.ErrNotExist) && o.zip && path.Ext(p) == "" {
		p += ".zip" // unzip x finds x.zip
	}
	if _, err := fs.Stat(fsys, fsName(p)); errors.Is(err, fs.ErrNotExist) {
		return
	}
	d, ok := a.fileAbs(dir.val)
	if !ok || !path.IsAbs(d) {
		return
	}
	cur := a.cur
	a.cur = s.idx
	defer func() { a.cur = cur }()
	target := func(name string) (string, bool) {
		name = strings.ReplaceAll(name, "\\", "/")
		abs := strings.HasPrefix(name, "/")
		rel := strings.TrimLeft(name, "/")
		parts := strings.Split(rel, "/")
		if o.strip > 0 {
			if len(parts) <= o.strip {
				return "", false
			}
			parts = parts[o.strip:]
		}
		if o.junk {
			parts = parts[len(parts)-1:]
		}
		rel = strings.Join(parts, "/")
		if abs && o.absolute {
			return path.Clean("/" + rel), true
		}
		return path.Join(d, rel), true
	}
	lim := archive.DefaultLimits
	lim.IgnoreZeros = o.zeros
	lim.Want = func(name string) bool {
		t, ok := target(name)
		if !ok {
			return false
		}
		k, dir := plantedKind(t)
		return k != "" && !dir
	}
	if !a.readBudget(a.display(p)) {
		return
	}
	start := time.Now()
	defer func() { a.readSpent += time.Since(start) }()
	f, st, err := gitread.OpenRegular(a.env.FS, p)
	var members []archive.Member
	if err == nil {
		if o.zip {
			ra, ok := f.(io.ReaderAt)
			if !ok {
				err = fmt.Errorf("%w: not seekable", archive.ErrUnreadable)
			} else {
				members, err = archive.Zip(ra, st.Size(), lim)
			}
		} else {
			members, err = archive.Tar(f, lim)
		}
		f.Close()
	}
	shown := a.display(p)
	if err != nil {
		a.add(guard.Finding{Check: "shell.archive-unread", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s unpacks %s, whose members could not all be read before it runs (%v): what it writes is not known", s.name, shown, err)})
	}
	if o.transform && len(members) > 0 {
		a.add(guard.Finding{Check: "shell.archive-unread", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("%s unpacks %s under names rewritten by --transform: where its members land is not known", s.name, shown)})
		return
	}
	facts := 0
	record := func(t string) {
		if facts++; facts == maxArchiveFacts+1 {
			a.add(guard.Finding{Check: "shell.archive-unread", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("%s unpacks %s, with more than %d files that decide what runs later", s.name, shown, maxArchiveFacts)})
		}
		if facts <= maxArchiveFacts {
			a.effectFact(t, action.PathWrite)
		}
	}
	escapes := 0
	for _, m := range members {
		t, ok := target(m.Name)
		if !ok {
			continue
		}
		if !action.Within(d, t) || hasDotDot(m.Name) {
			if escapes++; escapes <= 4 {
				a.add(guard.Finding{Check: "shell.archive-escape", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("%s unpacks %s, whose member %q names a path outside %s", s.name, shown, m.Name, a.display(d))})
			}
			if o.absolute && !action.Within(d, t) {
				record(t)
			}
			continue
		}
		switch m.Kind {
		case archive.Symlink, archive.Hardlink:
			to := m.Link
			switch {
			case path.IsAbs(to):
				to = path.Clean(to)
			case m.Kind == archive.Symlink:
				to = path.Join(path.Dir(t), to)
			default:
				to, _ = target(to) // a hard link names another member
			}
			if !action.Within(d, to) || a.decidesLater(to) {
				a.add(guard.Finding{Check: "shell.archive-link", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("%s unpacks %s, whose member %s links to %s: a write through it later writes there", s.name, shown, m.Name, to)})
			}
			if a.decidesLater(t) {
				record(t)
			}
		case archive.File, archive.Other:
			if !a.decidesLater(t) {
				continue
			}
			if k, dir := plantedKind(t); k != "" && !dir && m.Kept {
				if a.written == nil {
					a.written = map[string]writtenFile{}
				}
				a.written[t] = writtenFile{text: string(m.Data), known: true, path: t, at: s.idx}
			}
			record(t)
		}
	}
}

// sevenZipWrites judges 7z x (e: junk, without directories) of a zip or
// a tar on disk as unzip's and tar's are: 7z reads both, and writes their
// members where unzip and tar would.
func (a *analyzer) sevenZipWrites(s *segCtx, junk bool, dir arg) {
	seenSub := false
	for _, x := range s.args {
		if x.dyn {
			return
		}
		if strings.HasPrefix(x.val, "-") {
			continue
		}
		if !seenSub {
			seenSub = true
			continue
		}
		p, ok := a.fileAbs(x.val)
		if !ok {
			return
		}
		f, _, err := gitread.OpenRegular(a.env.FS, p)
		if err != nil {
			return
		}
		head := make([]byte, 512)
		n, _ := io.ReadFull(f, head)
		f.Close()
		switch archive.Format(head[:n]) {
		case "zip":
			a.archiveWrites(s, x, dir, archiveOpts{zip: true, junk: junk})
		case "tar":
			a.archiveWrites(s, x, dir, archiveOpts{junk: junk})
		}
		return
	}
}

// decidesLater reports whether writing p changes what runs later: a
// control file of the paths guard or a file planted.go judges by its text.
func (a *analyzer) decidesLater(p string) bool {
	if k, dir := plantedKind(p); k != "" && !dir {
		return true
	}
	return paths.IsControlFile(a.env.Home, p)
}

// hasDotDot reports whether an archive member's name has a ".."
// component.
func hasDotDot(name string) bool {
	for _, c := range strings.Split(strings.ReplaceAll(name, "\\", "/"), "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// tarArchive returns the archive file tar reads (-f FILE, --file=FILE, the
// f of a bundle such as xzf FILE) and the options that move its members.
func tarArchive(args []arg) (file arg, o archiveOpts, ok bool) {
	for k := 0; k < len(args); k++ {
		x := args[k]
		if x.dyn {
			continue
		}
		v := x.val
		switch {
		case v == "-f" || v == "--file":
			if k+1 < len(args) {
				file, ok = args[k+1], true
				k++
			}
		case strings.HasPrefix(v, "--file="):
			file, ok = arg{val: v[len("--file="):]}, true
		case strings.HasPrefix(v, "--strip-components="):
			fmt.Sscanf(v[len("--strip-components="):], "%d", &o.strip)
		case v == "--strip-components" && k+1 < len(args):
			fmt.Sscanf(args[k+1].val, "%d", &o.strip)
			k++
		case v == "-P" || v == "--absolute-names":
			o.absolute = true
		case v == "--ignore-zeros":
			o.zeros = true
		case strings.HasPrefix(v, "--transform") || strings.HasPrefix(v, "--xform"):
			o.transform = true
		case v == "-C" || v == "--directory":
			k++
		case len(v) > 1 && v[0] == '-' && v[1] != '-' || k == 0 && len(v) > 0 && v[0] != '-' && isLetters(v):
			// A bundle of one-letter options: those that take a value
			// take the next words in order (tar xzfC a.tgz dir).
			next := k + 1
			for _, c := range strings.TrimPrefix(v, "-") {
				switch c {
				case 'f':
					if rest := strings.TrimPrefix(v, "-"); v[0] == '-' && strings.IndexRune(rest, 'f') < len(rest)-1 {
						// -fFILE: the rest of the word is the file.
						file, ok = arg{val: rest[strings.IndexRune(rest, 'f')+1:]}, true
						goto done
					}
					if next < len(args) {
						file, ok = args[next], true
						next++
					}
				case 'C', 'b', 'T', 'X', 'K', 'N', 'g', 'V', 'L', 'H':
					next++
				case 'P':
					o.absolute = true
				case 'i':
					o.zeros = true
				}
			}
		done:
			k = next - 1
		}
	}
	return file, o, ok
}

// unzipArchive returns the archive unzip reads (its first operand) and the
// options that move its members.
func unzipArchive(args []arg) (arg, archiveOpts, bool) {
	o := archiveOpts{zip: true}
	for k := 0; k < len(args); k++ {
		x := args[k]
		v := x.val
		switch {
		case x.dyn:
			return arg{}, o, false
		case v == "-d" || v == "-P":
			k++
		case v == "-x":
			return arg{}, o, false // exclusions before the archive: not read
		case len(v) > 1 && v[0] == '-':
			if strings.ContainsRune(v[1:], 'j') && isLetters(v[1:]) {
				o.junk = true
			}
			if strings.Contains(v, ":") {
				o.absolute = true // -: keeps ../
			}
		default:
			for _, y := range args[k+1:] {
				if !y.dyn && (y.val == "-j" || len(y.val) > 1 && y.val[0] == '-' && isLetters(y.val[1:]) && strings.ContainsRune(y.val, 'j')) {
					o.junk = true
				}
			}
			return x, o, true
		}
	}
	return arg{}, o, false
}
