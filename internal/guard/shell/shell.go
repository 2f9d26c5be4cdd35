// Package shell is the shell guard: it parses a shell command into a real
// syntax tree (bash dialect) and judges every simple command in it on its
// own, so that a dangerous command cannot hide inside a compound one.
//
// Lists (;, &&, ||), pipes, subshells, blocks, command and process
// substitutions, functions, here-strings fed to a shell, "sh -c" strings,
// eval of static strings, xargs, find -exec and wrappers such as sudo, env,
// nice or timeout are unwrapped into segments. Each segment is classified:
// read-only commands are auto, ordinary development commands notify, unknown
// commands confirm, destructive uses of well-known tools confirm or approve,
// and a few catastrophic commands (removing the root, a system directory or
// the home directory, formatting or overwriting a disk, recursive permission
// changes of system directories, fork bombs) block.
//
// Values are followed statically, never guessed: variables and arrays
// assigned earlier in the command, the operators of ${…}, positional
// parameters (set --, function calls, sh -c), IFS splitting, the static
// output of echo, printf and cat through pipes, command and process
// substitutions, here-strings, xargs, GNU parallel and decoders (base64 -d,
// xxd -r -p, rev, tr), symbolic links (on disk and made by the command) and
// /proc/PID/root. A catastrophe proved through any of them blocks, and so
// does one inside a container's mount of a host directory, a Windows form
// (Remove-Item, rd /s, del /s, format), or the inline code of an interpreter
// (a deletion API given such a path as a string literal; the strings of
// os.system, subprocess and the like are judged as shell). What cannot be
// resolved statically — a command name built at run time, a download piped
// into a shell, eval of a computed string — needs at least an approval, and
// so does running decoded content even after its text was judged. The
// command's level is the strictest segment's.
//
// The lists are data (rules.yaml, embedded) that a policy extends through
// Config. Deletions that need an approval carry a preview of what would be
// removed, read from the file system; the guard never executes anything and
// never modifies the file system.
package shell

import (
	"io/fs"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
)

// Env is the environment a command is judged in.
type Env struct {
	// Cwd is the working directory the command runs in. Relative paths are
	// resolved against it; empty means unknown.
	Cwd string
	// Home is the user's home directory, which "~" and $HOME expand to;
	// empty means unknown (then "~" itself is still treated as the home).
	Home string
	// FS is the file system previews read, rooted at "/" (absolute paths
	// are looked up without their leading slash). Nil means the real
	// operating system's file system.
	FS fs.FS
	// SelfAPI recognises Overseer's own daemon (see selfapprove.go); nil
	// knows its default port only.
	SelfAPI *netguard.SelfAPI
	// Vars are environment variables whose values are known, taken as the
	// shell's own when a command names them unassigned: $OVERSEER_HOME is
	// Overseer's home, so `cd "$OVERSEER_HOME" && cat token` reads the
	// token. ($HOME and $PWD come from Home and Cwd.)
	Vars map[string]string
	// later collects the paths of commands planted for a later program
	// (Facts.Later); nil collects nothing.
	later *[]action.PathFact
}

// Origin says how a segment was reached inside the command.
type Origin string

// The origins of segments.
const (
	OriginList      Origin = "list"       // a plain command or a member of a list (;, &&, ||)
	OriginPipe      Origin = "pipe"       // a stage of a pipeline
	OriginSubst     Origin = "subst"      // inside $(…) or backticks
	OriginProcSubst Origin = "procsubst"  // inside <(…) or >(…)
	OriginShellC    Origin = "sh -c"      // the string given to a shell's -c option
	OriginStdin     Origin = "stdin"      // code fed to a shell on standard input (here-string, echo … | sh)
	OriginEval      Origin = "eval"       // a static string given to eval
	OriginXargs     Origin = "xargs"      // the command xargs runs
	OriginFindExec  Origin = "find -exec" // the command find -exec, -execdir or -ok runs
	OriginFunction  Origin = "function"   // the body of a function defined in the command
	OriginTrap      Origin = "trap"       // the handler of a trap
	OriginAlias     Origin = "alias"      // the value of an alias
	OriginWatch     Origin = "watch"      // the command watch runs
	OriginEnv       Origin = "env"        // a command an environment variable names (GIT_EDITOR, LESSOPEN)
	OriginRemote    Origin = "ssh"        // the command ssh runs on another machine
	OriginGit       Origin = "git"        // a command git runs (rebase --exec, bisect run, submodule foreach)
	OriginScript    Origin = "script"     // a script file the command wrote earlier and then runs
	OriginContainer Origin = "container"  // the command a container runs (docker run IMAGE CMD)
	OriginInline    Origin = "inline"     // a command the inline code of an interpreter runs (os.system, subprocess)
)

// Segment is one simple command after unwrapping.
type Segment struct {
	// Name is the program's base name, lower-cased, without a directory or
	// an ".exe" suffix; empty when the name is not static.
	Name string
	// Path is the program as written after quote removal ("/bin/rm").
	Path string
	// Args are the arguments after the program name. An argument that is
	// not static is given as its source text and makes Dynamic true.
	Args []string
	// Dynamic is true when the name or an argument could not be resolved
	// statically, or arguments are added at run time (xargs, find -exec).
	Dynamic bool
	// Origin says where the segment came from.
	Origin Origin
	// Wrappers are the programs that were unwrapped to reach this one, in
	// order ("sudo", "env", "nice").
	Wrappers []string
	// Level is the strictest level of the findings about this segment.
	Level action.Level
	// Stdin is the file standard input is redirected from (< FILE), when
	// static (see analyzer.abs).
	Stdin string
	// PipedFiles are the files that the stages before a network sender in
	// its pipeline read (cat notes.txt | gzip | curl -d @- …): their
	// content may be what it sends. Set on senders only.
	PipedFiles []string
	// LocalCluster is, for a kubectl or helm command the guard found to
	// act on a cluster on this machine, the context and its API server.
	LocalCluster string

	flags segFlags
	text  string   // the static output of an echo, printf or cat feeding a pipe
	reads []string // the files it reads (or may: a program whose effect is unknown)
	// looks are the files it only reads; changes those it writes,
	// deletes or may (changedBefore).
	looks, changes []string
	// unseen are the directories it writes files into whose names and
	// content are not known when judged (an archive unpacked there); ""
	// is a directory computed at run time (unseen.go).
	unseen []string
}

// segFlags are what a segment does that matters to its neighbours in a
// pipeline.
type segFlags uint16

const (
	fExecStdin     segFlags = 1 << iota // interprets code read from standard input
	fDownload                           // downloads (its output is remote content)
	fDecode                             // decodes or unpacks its input
	fSecret                             // reads a secret file
	fNetSend                            // sends data over the network
	fText                               // its output is the static text in Segment.text
	fPrivileged                         // runs with elevated privileges
	fSecretChecked                      // its arguments were checked for secrets
	fDecoded                            // its static text was decoded from an encoding (base64, hex)
)

// Analysis is the result of analysing one command.
type Analysis struct {
	// Segments are the simple commands, in the order they appear.
	Segments []Segment
	// Paths are the paths the command deletes, writes or reads, resolved
	// against the working directory; paths that cannot be made absolute
	// are left out. Glob patterns are kept as patterns.
	Paths []action.PathFact
	// ParseFailed is true when the command (or a string re-parsed from it)
	// is not valid shell; ParseError then says why.
	ParseFailed bool
	ParseError  string
	// Findings are what the guard found, one per check and subject.
	Findings []guard.Finding
	// Level is the strictest level of the findings: the command's level.
	Level action.Level
}

// Analyze parses and judges command with the default lists. It never runs
// anything; previews only read the file system.
func Analyze(command string, env Env) Analysis {
	return analyze(defaultRules(), command, env)
}
