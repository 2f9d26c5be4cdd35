package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// previewList collects preview items up to a limit and counts the rest.
type previewList struct {
	pv    action.Preview
	limit int
	total int
	notes []string
}

func (l *previewList) add(item string) {
	l.total++
	if len(l.pv.Items) < l.limit {
		l.pv.Items = append(l.pv.Items, item)
	} else {
		l.pv.More++
	}
}

func (l *previewList) done(summary string) *action.Preview {
	l.pv.Summary = summary
	if len(l.notes) > 0 {
		l.pv.Summary += " (" + strings.Join(l.notes, "; ") + ")"
	}
	return &l.pv
}

// fsName turns an absolute path into a name of the file system rooted at
// "/".
func fsName(abs string) string {
	n := strings.TrimPrefix(path.Clean(abs), "/")
	if n == "" {
		return "."
	}
	return n
}

// previewRemoval lists what removing the targets would remove: glob
// matches, and directories with the number of files below them. It only
// reads the file system.
func (a *analyzer) previewRemoval(name string, ts []rmTarget) *action.Preview {
	l := &previewList{limit: a.r.previewLimit}
	for _, t := range ts {
		if !path.IsAbs(t.abs) {
			l.notes = append(l.notes, t.show+": the working directory is not known, so it could not be previewed")
			continue
		}
		if !t.glob {
			l.add(a.describeEntry(t.abs))
			continue
		}
		matches, ok := t.matches, t.expanded
		if !ok {
			matches, ok = a.globMatches(t.abs, true)
		}
		if !ok {
			l.notes = append(l.notes, t.show+": the pattern could not be expanded")
			continue
		}
		for _, m := range matches {
			l.add(a.describeEntry(m))
		}
		if len(matches) == 0 {
			l.notes = append(l.notes, t.show+" matches nothing")
		}
	}
	return l.done(fmt.Sprintf("%s would remove %d path(s)", name, l.total))
}

// hiddenSkipped reports whether the shell's glob would not match m because
// its base name starts with a dot and the pattern's last component does not.
func hiddenSkipped(m, pattern string) bool {
	return strings.HasPrefix(path.Base(m), ".") && !strings.HasPrefix(path.Base(pattern), ".")
}

// describeEntry describes one path for a preview: "build/ (42 files)",
// "notes.txt", "link (symbolic link)", "x (does not exist)".
func (a *analyzer) describeEntry(abs string) string {
	fsys := a.fileSystem()
	show := a.display(abs)
	var info fs.FileInfo
	var err error
	if lfs, ok := fsys.(fs.ReadLinkFS); ok {
		info, err = lfs.Lstat(fsName(abs))
	} else {
		info, err = fs.Stat(fsys, fsName(abs))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return show + " (does not exist)"
	case err != nil:
		return show + " (cannot be read: " + err.Error() + ")"
	case info.Mode()&fs.ModeSymlink != 0:
		return show + " (symbolic link)"
	case info.IsDir():
		n, complete := a.countFiles(abs)
		suffix := "/"
		if strings.HasSuffix(show, "/") {
			suffix = ""
		}
		if !complete {
			return fmt.Sprintf("%s%s (at least %d files)", show, suffix, n)
		}
		return fmt.Sprintf("%s%s (%d files)", show, suffix, n)
	}
	return show
}

// countFiles counts the files below a directory, within the analysis's
// budget of file system entries.
func (a *analyzer) countFiles(abs string) (n int, complete bool) {
	complete = true
	_ = fs.WalkDir(a.fileSystem(), fsName(abs), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		a.budget--
		if a.budget < 0 {
			complete = false
			return fs.SkipAll
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	return n, complete
}

// previewFind lists what a simple find … -delete would remove.
func (a *analyzer) previewFind(roots []string, q findQuery) *action.Preview {
	l := &previewList{limit: a.r.previewLimit}
	fsys := a.fileSystem()
	for _, root := range roots {
		if !path.IsAbs(root) {
			l.notes = append(l.notes, root+": the working directory is not known")
			continue
		}
		base := fsName(root)
		err := fs.WalkDir(fsys, base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == base {
					return err
				}
				return nil
			}
			a.budget--
			if a.budget < 0 {
				l.notes = append(l.notes, "stopped after the preview's limit of entries; the list is incomplete")
				return fs.SkipAll
			}
			depth := 0
			if p != base {
				rel := p
				if base != "." {
					rel = strings.TrimPrefix(p, base+"/")
				}
				depth = strings.Count(rel, "/") + 1
			}
			if q.maxDepth >= 0 && depth > q.maxDepth {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if depth >= q.minDepth && q.matches(d) {
				abs := "/"
				if p != "." {
					abs += p
				}
				l.add(a.display(abs))
			}
			return nil
		})
		if err != nil {
			l.notes = append(l.notes, root+": "+err.Error())
		}
	}
	return l.done(fmt.Sprintf("find would delete %d path(s)", l.total))
}

// matches reports whether a directory entry passes the query's tests.
func (q findQuery) matches(d fs.DirEntry) bool {
	name := d.Name()
	for _, n := range q.names {
		if ok, _ := path.Match(n, name); !ok {
			return false
		}
	}
	for _, n := range q.inames {
		if ok, _ := path.Match(n, strings.ToLower(name)); !ok {
			return false
		}
	}
	switch q.typ {
	case "":
	case "f":
		return d.Type().IsRegular()
	case "d":
		return d.IsDir()
	case "l":
		return d.Type()&fs.ModeSymlink != 0
	default:
		return false
	}
	return true
}
